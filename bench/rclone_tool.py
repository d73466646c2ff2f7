"""rclone for the benches' peer columns, built on first use and kept.

No Debian package of rclone exists here, so it is built from source with the Go toolchain
(`go install github.com/rclone/rclone@VERSION`, at the lowest CPU priority: several minutes of
CPU) into .localcloud/tools/rclone-VERSION/, then reused. An `rclone` on PATH is used as is.
The test suite never needs it. Remotes are given as connection strings (no config file).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = "v1.76.0"
TOOLS = ROOT / ".localcloud" / "tools" / f"rclone-{VERSION}"
GO = shutil.which("go") or "/usr/local/go/bin/go"
BUILD_TIMEOUT_S = 3600


class RcloneUnavailable(RuntimeError):
    """rclone is not on PATH and could not be built: the message says why."""


def rclone() -> str:
    """The rclone binary to run: on PATH, else the one built before, else built now."""
    found = shutil.which("rclone")
    if found:
        return found
    built = TOOLS / "rclone"
    if not built.exists():
        build(built)
    return str(built)


def build(target: Path) -> None:
    if not Path(GO).exists():
        raise RcloneUnavailable(f"no rclone on PATH and no Go toolchain at {GO} to build it")
    target.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOBIN": str(target.parent), "GOFLAGS": "-trimpath"}
    print(f"building rclone {VERSION} into {target.parent} (several minutes)...", flush=True)
    result = subprocess.run(
        ["nice", "-n", "19", GO, "install", f"github.com/rclone/rclone@{VERSION}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    if result.returncode != 0 or not target.exists():
        raise RcloneUnavailable(f"go install rclone@{VERSION} failed: {result.stderr.strip()[-2000:]}")


def obscure(secret: str) -> str:
    """rclone's own reversible encoding of a password, as its remotes expect it."""
    return subprocess.run(
        [rclone(), "obscure", secret], capture_output=True, text=True, check=True
    ).stdout.strip()


def s3_remote(endpoint: str, bucket: str) -> str:
    """The bucket as an rclone remote: LocalStack's S3, path-style, its test credentials."""
    return (
        f":s3,provider=Other,endpoint='{endpoint}',access_key_id=test,secret_access_key=test,"
        f"region=us-east-1,force_path_style=true:{bucket}"
    )


def webdav_remote(url: str, user: str, password: str) -> str:
    return f":webdav,url='{url}',vendor=other,user='{user}',pass='{obscure(password)}':"


def version() -> str:
    out = subprocess.run([rclone(), "version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0]
