"""1,000 small files into HyCloud: `rclone copy` through `hycloud serve webdav` (rclone's webdav
remote, its default settings) beside `hycloud put -r`, against the running local cloud.

The gateway answers a small file's PUT from its write-back cache and sends the files in bundles,
so two times are given for it: until `rclone copy` returns, and until everything is in the cloud
(the gateway is stopped with SIGTERM, which sends what it holds, and the files are counted through
the API). rclone is built on first use (bench/rclone_tool.py).

    .venv/bin/python bench/webdav_bench.py [--files 1000]

Writes bench/results/webdav_bench.{json,md,png}.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]

import rclone_tool  # noqa: E402
import result_files  # noqa: E402

from hycloud.admin import create_user  # noqa: E402
from infra.local import deploy as local  # noqa: E402

HYCLOUD = str(Path(sys.executable).parent / "hycloud")
TIMEOUT_S = 1800


def make_tree(root: Path, count: int) -> int:
    """`count` files of 100 to 4,000 bytes in 10 folders; their total size."""
    rng, total = random.Random(1000), 0
    for i in range(count):
        path = root / f"d{i % 10}" / f"f{i:04d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = rng.randbytes(rng.randint(100, 4000))
        path.write_bytes(data)
        total += len(data)
    return total


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, timeout=TIMEOUT_S)
    return round(time.perf_counter() - t0, 2)


def count_files(folder: str, env: dict[str, str]) -> int:
    out = subprocess.run(
        [HYCLOUD, "find", folder, "--type", "f"], env=env, check=True, capture_output=True, text=True
    ).stdout
    return len(out.splitlines())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(api_url: str, env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [HYCLOUD, "serve", "webdav", "--port", str(port), "--endpoint", api_url]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(log, "wb"))
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"gateway did not start: {log.read_text()}") from None
            time.sleep(0.3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    args = parser.parse_args()
    outputs, _ = local.running_deployment()
    user = f"davbench-{uuid.uuid4().hex[:8]}"
    key = create_user(outputs["TableName"], user)
    env = {**os.environ, "HYCLOUD_ENDPOINT": outputs["LocalApiUrl"], "HYCLOUD_API_KEY": key}
    env["HYCLOUD_CONFIG"] = "/nonexistent/config.json"
    rclone = rclone_tool.rclone()
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="webdav-bench-") as tmp:
        src = Path(tmp) / "src"
        size = make_tree(src, args.files)
        print(f"{args.files} files, {size} bytes", flush=True)
        seconds["hycloud put -r"] = timed([HYCLOUD, "put", "-r", str(src), "/cli"], env)
        print(f"hycloud put -r: {seconds['hycloud put -r']} s", flush=True)
        gateway, url = start_gateway(outputs["LocalApiUrl"], env, Path(tmp) / "gateway.log")
        try:
            remote = rclone_tool.webdav_remote(url, user, key)
            t0 = time.perf_counter()
            subprocess.run([rclone, "copy", str(src), remote + "dav"], check=True, timeout=TIMEOUT_S)
            seconds["rclone copy to webdav: rclone done"] = round(time.perf_counter() - t0, 2)
            gateway.terminate()  # SIGTERM: the gateway sends what it holds, then ends
            gateway.wait(timeout=TIMEOUT_S)
            seconds["rclone copy to webdav: all in the cloud"] = round(time.perf_counter() - t0, 2)
        finally:
            if gateway.poll() is None:
                gateway.kill()
        print(seconds, flush=True)
        sent = {"/cli": count_files("/cli", env), "/dav": count_files("/dav", env)}
    assert sent == {"/cli": args.files, "/dav": args.files}, sent
    ratio = seconds["rclone copy to webdav: all in the cloud"] / seconds["hycloud put -r"]
    text = f"# WebDAV bench\n\n{args.files} small files (100-4,000 bytes, {size} bytes) in 10 folders, "
    text += f"{rclone_tool.version()} with its default settings (4 transfers).\n\n"
    text += "| run | s |\n| --- | ---: |\n" + "".join(f"| {k} | {v:.2f} |\n" for k, v in seconds.items())
    text += f"\nWebDAV, all in the cloud, is {ratio:.2f}x `hycloud put -r`; every file was counted through the API.\n"
    print(text)
    doc = {"files": args.files, "bytes": size, "seconds": seconds, "ratio": round(ratio, 2)}
    doc["rclone"] = rclone_tool.version()
    result_files.write("webdav_bench", doc, text)


if __name__ == "__main__":
    main()
