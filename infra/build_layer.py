"""Build the core Lambda layer into build/layers/core/python without Docker.

Third-party wheels are fetched for Lambda's platform (manylinux x86_64, CPython 3.12) whatever
the build host is; the core library is copied as source, and its compiled delta loops are built
here with cffi (plain C without -march, linked against nothing newer than glibc 2.14, so a .so
built on any x86_64 Linux host loads on Lambda's). A stamp of the inputs makes a rebuild with
unchanged inputs a no-op; a lock file keeps two synths at once (a deploy and a test, two test
workers) from building into the same folder together.
"""

from __future__ import annotations

import compileall
import fcntl
import hashlib
import py_compile
import runpy
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "layers" / "core"
OUT = ROOT / "build" / "layers" / "core"


LAYOUT = "3"  # bumped when the build itself changes (2: bytecode compiled in, 3: compiled loops)


def _inputs_digest() -> str:
    digest = hashlib.sha256(LAYOUT.encode())
    for path in sorted(
        [
            CORE / "requirements.txt",
            *(p for ext in ("py", "json", "c") for p in CORE.glob(f"hycloud_core/**/*.{ext}")),
        ]
    ):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build() -> Path:
    digest = _inputs_digest()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT.parent / "core.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        stamp = OUT / ".stamp"
        if not (stamp.exists() and stamp.read_text() == digest):
            _build(digest)
    return OUT


def _build(digest: str) -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    target = OUT / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",  # compiled once below, in a form that survives the asset zip
            "--target",
            str(target),
            "--platform",
            "manylinux_2_28_x86_64",
            "--platform",
            "manylinux2014_x86_64",
            "--implementation",
            "cp",
            "--python-version",
            "3.12",
            "--only-binary=:all:",
            "-r",
            str(CORE / "requirements.txt"),
        ],
        check=True,
    )
    shutil.copytree(
        CORE / "hycloud_core",
        target / "hycloud_core",
        ignore=shutil.ignore_patterns("__pycache__", "*.md", "*.so", "*.c"),
    )
    _build_native(target)
    _compile(target)
    (OUT / ".stamp").write_text(digest)


def _build_native(target: Path) -> None:
    """hycloud_core.delta._native, compiled in a scratch folder; only the .so goes in the layer."""
    ffibuilder = runpy.run_path(str(CORE / "hycloud_core" / "delta" / "native_build.py"))["ffibuilder"]
    with tempfile.TemporaryDirectory() as scratch:
        try:
            built = Path(ffibuilder.compile(tmpdir=scratch))
        except Exception as err:  # no compiler: the functions run the same loops in numpy, slower
            print(f"compiled delta loops not built ({err}); the layer's delta engine will use numpy")
            return
        shutil.copy2(built, target / "hycloud_core" / "delta" / built.name)


def _compile(target: Path) -> None:
    """Bytecode for every module, checked by nothing: asset zips reset file times (to 1980), which
    voids timestamp-checked .pyc files, and Lambda's read-only code cannot cache new ones, so
    without this every cold start compiles what it imports from source (~0.5 s for a delta job)."""
    if sys.version_info[:2] != (3, 12):  # .pyc files are per Python version: the runtime's only
        return
    compileall.compile_dir(
        target, quiet=1, force=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )


if __name__ == "__main__":
    print(build())
