"""`git clone` over a transport into `hycloud mount --native`: git's index-pack fsyncs the pack and
its index, and the mount's fsync returns once the file is in the cloud. Clones into a fresh mount
of this tree's client, and (--baseline DIR) of another checkout's, in turn, each on a quiet
machine; local disk beside them. Both run this tree's daemon (client/native). Figures in
bench/results/mount_profile.md ("fsync").

    .venv/bin/python bench/mount_fsync.py --baseline /tmp/base
        # /tmp/base: git archive REV client layers/core | tar x -C /tmp/base
"""

from __future__ import annotations

import argparse
import os
import tempfile
import uuid
from pathlib import Path

import mount_bench as mb


def mount_clones(
    base: Path, origin: Path, api_url: str, key: str, code: Path | None, clones: int
) -> list[float]:
    mnt = base / f"mnt-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    flags = ("--no-io-uring", "--cache-dir", str(base))
    proc = mb.start_mount(mnt, api_url, key, base / f"{mnt.name}.log", code=code, native=True, flags=flags)
    try:
        times = []
        for _ in range(clones):
            mb.wait_quiet()
            times.append(mb.timed_clone(f"file://{origin}", mnt))
        return times
    finally:
        mb.unmount(mnt, proc, "hycloud mount --native")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", metavar="DIR", help="another checkout's client/ and layers/core/")
    parser.add_argument("--clones", type=int, default=3, help="clones per mount")
    parser.add_argument("--pairs", type=int, default=2, help="mounts of each client, in turn")
    args = parser.parse_args()
    os.environ.setdefault("HYCLOUD_FUSED", str(mb.ROOT / "client" / "native" / "hycloud-fused"))
    outputs, _ = mb.local.running_deployment()
    key = mb.create_user(outputs["TableName"], f"bench-{uuid.uuid4().hex[:8]}")
    sides: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.baseline:
        sides.insert(0, (f"baseline {args.baseline}", Path(args.baseline).resolve()))
    with tempfile.TemporaryDirectory(prefix="mount-fsync-") as tmp:
        base = Path(tmp)
        origin = mb.make_origin(base, mb.make_tarball(base)[0])
        for _ in range(args.pairs):
            for label, code in sides:
                times = mount_clones(base, origin, outputs["LocalApiUrl"], key, code, args.clones)
                disk = mb.timed_clone(f"file://{origin}", base)
                shown = ", ".join(f"{t:.2f}" for t in times)
                print(f"{label}: git clone file:// {shown} s; local disk {disk:.3f} s", flush=True)


if __name__ == "__main__":
    main()
