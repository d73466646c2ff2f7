"""Only what pyproject.toml cannot say: the compiled delta loops (cffi)."""

from setuptools import setup

setup(cffi_modules=["hycloud_core/delta/native_build.py:ffibuilder"])
