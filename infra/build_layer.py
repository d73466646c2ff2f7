"""Build the core Lambda layer into build/layers/core/python without Docker.

Third-party wheels are fetched for Lambda's platform (manylinux x86_64, CPython 3.12) whatever
the build host is; the core library is copied as source. A stamp of the inputs makes a rebuild
with unchanged inputs a no-op.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "layers" / "core"
OUT = ROOT / "build" / "layers" / "core"


def _inputs_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(
        [CORE / "requirements.txt", *CORE.glob("hycloud_core/**/*.py"), *CORE.glob("hycloud_core/**/*.json")]
    ):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build() -> Path:
    stamp = OUT / ".stamp"
    digest = _inputs_digest()
    if stamp.exists() and stamp.read_text() == digest:
        return OUT
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
        CORE / "hycloud_core", target / "hycloud_core", ignore=shutil.ignore_patterns("__pycache__", "*.md")
    )
    stamp.write_text(digest)
    return OUT


if __name__ == "__main__":
    print(build())
