"""Only what pyproject.toml cannot say: the compiled delta loops (cffi), built when a C compiler is
at hand; without one the package still installs, and the delta engine runs them in numpy."""

from setuptools import setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as err:  # no compiler, or it failed: numpy does the same work, slower
            self.warn(f"{ext.name} not built ({err}); the delta engine will use numpy")


setup(
    cffi_modules=["hycloud_core/delta/native_build.py:ffibuilder"],
    cmdclass={"build_ext": OptionalBuildExt},
)
