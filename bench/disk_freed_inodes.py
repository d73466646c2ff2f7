"""`git clone` of the mount bench's tree on local disk (as its local disk column clones), before and
right after thousands of files are removed nearby: in a folder beside them and in one of a block
group of its own (`chattr +T` on its parent, as bench/mount_bench.py `spread_folder` places each
column), taking turns. On ext4 without a journal a new inode skips every inode of its group freed
in the last 60 s (longer while the group's inode table is unwritten). Needs no cloud; a run right
after another (whose files were just removed) measures that removal too. Figures in
bench/results/mount_profile.md ("The disk").

    .venv/bin/python bench/disk_freed_inodes.py --clones 6 --removed 6000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import mount_bench as mb


def clones(origin: Path, places: dict[str, Path], count: int) -> dict[str, list[float]]:
    """`count` clones into each place, taking turns, so both see the same moment."""
    times: dict[str, list[float]] = {name: [] for name in places}
    for _ in range(count):
        for name, parent in places.items():
            mb.wait_quiet()
            times[name].append(mb.timed_clone(str(origin), parent) * 1000)
    return times


def remove_files(parent: Path, count: int) -> None:
    """Write and remove `count` small files in `parent`: as a mount's local copy at unmount."""
    folder = parent / "removed"
    folder.mkdir()
    paths = [folder / f"f{i:05d}" for i in range(count)]
    for path in paths:
        path.write_bytes(b"x" * 512)
    for path in paths:
        path.unlink()
    folder.rmdir()


def line(label: str, times: list[float]) -> str:
    return f"{label}: {min(times):.0f}-{max(times):.0f} ms (median {statistics.median(times):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clones", type=int, default=6)
    parser.add_argument("--removed", type=int, default=6000, help="files removed beside the clones")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="disk-freed-") as tmp:
        base = Path(tmp)
        origin = mb.make_origin(base, mb.make_tarball(base)[0])
        mb.spread_folder(base / "spread")
        places = {"nearby": base / "near", "in a block group of its own": base / "spread" / "own"}
        for folder in places.values():
            folder.mkdir()
        before = clones(origin, places, args.clones)
        remove_files(places["nearby"], args.removed)
        after = clones(origin, places, args.clones)
        for name in places:
            print(line(f"{name}, before", before[name]))
            print(line(f"{name}, right after {args.removed:,} files were removed nearby", after[name]))
        for note in mb.NOTES:
            print(note)


if __name__ == "__main__":
    main()
