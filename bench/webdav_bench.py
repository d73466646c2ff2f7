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


# rclone's webdav remote (backend/webdav/webdav.go, Object.Update): MKCOL of the parent, PUT, then
# PROPFIND of the file, every call through a pacer of 10 ms between calls unless told otherwise
CALLS_PER_FILE, PACER_S = 3, 0.010
RCLONE_RUNS = (
    ("rclone, its defaults", "/dav", []),
    ("rclone, no pacer", "/dav0", ["--webdav-pacer-min-sleep", "0"]),
)


def rclone_copy(
    api_url: str, env: dict[str, str], tmp: Path, login: tuple[str, str], run: tuple, src: Path
) -> dict[str, float]:
    """One `rclone copy` through a fresh gateway: seconds until rclone is done and until all is in
    the cloud (SIGTERM: the gateway sends what it holds, then ends)."""
    name, folder, flags = run
    gateway, url = start_gateway(api_url, env, tmp / f"gateway{folder.strip('/')}.log")
    try:
        remote = rclone_tool.webdav_remote(url, *login)
        t0 = time.perf_counter()
        cmd = [rclone_tool.rclone(), "copy", str(src), remote + folder.strip("/"), *flags]
        subprocess.run(cmd, check=True, timeout=TIMEOUT_S)
        done = round(time.perf_counter() - t0, 2)
        gateway.terminate()
        gateway.wait(timeout=TIMEOUT_S)
        return {f"{name}: rclone done": done, f"{name}: all in the cloud": round(time.perf_counter() - t0, 2)}
    finally:
        if gateway.poll() is None:
            gateway.kill()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    args = parser.parse_args()
    outputs, _ = local.running_deployment()
    user = f"davbench-{uuid.uuid4().hex[:8]}"
    key = create_user(outputs["TableName"], user)
    env = {**os.environ, "HYCLOUD_ENDPOINT": outputs["LocalApiUrl"], "HYCLOUD_API_KEY": key}
    rclone_tool.rclone()  # built before the clock starts
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="webdav-bench-") as tmp:
        env["HYCLOUD_CONFIG"] = str(Path(tmp) / "config.json")  # none; its state file kept there
        src = Path(tmp) / "src"
        size = make_tree(src, args.files)
        print(f"{args.files} files, {size} bytes", flush=True)
        seconds["hycloud put -r"] = timed([HYCLOUD, "put", "-r", str(src), "/cli"], env)
        print(f"hycloud put -r: {seconds['hycloud put -r']} s", flush=True)
        for name, folder, flags in RCLONE_RUNS:
            seconds |= rclone_copy(
                outputs["LocalApiUrl"], env, Path(tmp), (user, key), (name, folder, flags), src
            )
            print(seconds, flush=True)
        sent = {folder: count_files(folder, env) for folder in ["/cli"] + [f for _, f, _ in RCLONE_RUNS]}
    assert set(sent.values()) == {args.files}, sent
    ratios = {
        name: seconds[f"{name}: all in the cloud"] / seconds["hycloud put -r"] for name, _, _ in RCLONE_RUNS
    }
    floor = args.files * CALLS_PER_FILE * PACER_S
    text = f"# WebDAV bench\n\n{args.files} small files (100-4,000 bytes, {size} bytes) in 10 folders, "
    text += f"{rclone_tool.version()}'s webdav remote (4 transfers).\n\n"
    text += "| run | s |\n| --- | ---: |\n" + "".join(f"| {k} | {v:.2f} |\n" for k, v in seconds.items())
    text += "\nAll in the cloud, against `hycloud put -r`: "
    text += ", ".join(f"{name} {ratio:.2f}x" for name, ratio in ratios.items())
    text += ". Every file was counted through the API.\n\n"
    text += (
        f"rclone's webdav remote makes {CALLS_PER_FILE} calls per file it uploads (MKCOL of the folder, PUT, "
    )
    text += f"PROPFIND of the file) and by default spaces its calls {PACER_S * 1e3:.0f} ms apart "
    text += (
        f"(`--webdav-pacer-min-sleep`), whatever the server: {floor:.1f} s for {args.files} files at least, "
    )
    text += f"{floor / seconds['hycloud put -r']:.2f}x `hycloud put -r` here.\n"
    print(text)
    doc = {
        "files": args.files,
        "bytes": size,
        "seconds": seconds,
        "ratios": {k: round(v, 2) for k, v in ratios.items()},
    }
    doc["rclone_pacer_floor_s"] = round(floor, 2)
    doc["rclone"] = rclone_tool.version()
    result_files.write("webdav_bench", doc, text)


if __name__ == "__main__":
    main()
