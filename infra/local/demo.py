"""The main job, on one machine: start the local cloud, deploy, create a user, use the filesystem.

Everything goes through the real pieces: the CDK app deployed by cdklocal, the REST API, and the
`hycloud` command line. The local cloud keeps running afterwards (stop it with `make down`).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infra.local import deploy as local  # noqa: E402

HYCLOUD = str(Path(sys.executable).parent / "hycloud")


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def hycloud(*args: str, env: dict[str, str], stdin: str | None = None) -> str:
    print(f"$ hycloud {' '.join(args)}", flush=True)
    result = subprocess.run([HYCLOUD, *args], env=env, input=stdin, capture_output=True, text=True)
    print(result.stdout.rstrip() or "", result.stderr.rstrip(), sep="\n" if result.stderr else "", flush=True)
    if result.returncode != 0:
        raise SystemExit(f"hycloud {args[0]} failed with exit code {result.returncode}")
    return result.stdout


def main() -> None:
    t0 = time.monotonic()
    step("start the local cloud")
    local.start()
    step("deploy the CDK app into it")
    outputs = local.deploy()
    print(json.dumps(outputs, indent=2))
    cloud = {**os.environ, **local.cloud_env()}

    step("create a user")
    user = f"demo-{int(time.time())}"
    key = json.loads(
        hycloud("--json", "admin", "create-user", user, "--table", outputs["TableName"], env=cloud)
    )["api_key"]
    work = Path(tempfile.mkdtemp(prefix="hycloud-demo-"))
    env = {**os.environ, "HYCLOUD_CONFIG": str(work / "config.json")}
    hycloud("configure", "--outputs", str(local.OUTPUTS), "--key-stdin", env=env, stdin=key)
    hycloud("whoami", env=env)

    step("a short session: make a directory, upload, list, download, verify")
    files = {
        "notes.txt": b"HyCloud keeps small files on EFS.\n" * 40,  # small: through the API to EFS
        "data.bin": os.urandom(256 * 1024),
        "archive.tar": os.urandom(6 * 1024 * 1024),  # large: straight to S3, a link file on EFS
    }
    for name, data in files.items():
        (work / name).write_bytes(data)
    hycloud("mkdir", "-p", "/projects/demo", env=env)
    for name in files:
        hycloud("put", str(work / name), f"/projects/demo/{name}", env=env)
    hycloud("ls", "/projects/demo", env=env)
    (work / "back").mkdir()
    for name, data in files.items():
        hycloud("get", f"/projects/demo/{name}", str(work / "back" / name), env=env)
        same = hashlib.sha256((work / "back" / name).read_bytes()).digest() == hashlib.sha256(data).digest()
        print(f"verify {name}: {'identical' if same else 'DIFFERENT'}")
        if not same:
            raise SystemExit(1)
    hycloud("cp", "/projects/demo/archive.tar", "/projects/demo/archive-copy.tar", env=env)
    hycloud("stat", "/projects/demo/archive-copy.tar", env=env)
    hycloud("usage", env=env)
    step(f"done in {time.monotonic() - t0:.0f}s; the local cloud is still running (stop it: make down)")


if __name__ == "__main__":
    main()
