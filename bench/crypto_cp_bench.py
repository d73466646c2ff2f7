"""A copy inside one encrypted folder: reusing its chunks (encrypted/moves.py, what `hycloud cp`/`mv`,
the mount's rename, WebDAV's COPY/MOVE and hycloud:// do) against decrypting the file and sealing
it again (what any way in that only reads and writes plaintext must do), side by side in one run
on an in-memory store: seconds of wall time, bytes read from the store and bytes sent to it.

Both send about the same: convergent chunks are deduplicated, so the reseal sends only the new
manifest too. The difference is everything read and the CPU to decrypt, check and seal it.

    .venv/bin/python bench/crypto_cp_bench.py [--mib 24] [--rounds 3]

Writes bench/results/crypto-cp.md. No cloud needed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from hycloud.encrypted import EncryptedFolder, MemoryStore, files, moves, upload
from hycloud.encrypted.counters import Counters
from hycloud_core.crypto.keys import KdfParams

RESULTS = Path(__file__).parent / "results" / "crypto-cp.md"


class Counting:
    """The store, counting the bytes read from it and sent to it."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner, self.read, self.sent = inner, 0, 0

    def read_many(self, rels: Iterable[str]) -> dict[str, bytes | None]:
        found = self.inner.read_many(rels)
        self.read += sum(len(b) for b in found.values() if b is not None)
        return found

    def write_many(self, blobs: Mapping[str, bytes], expect: Mapping[str, str] | None = None) -> set[str]:
        self.sent += sum(len(b) for b in blobs.values())
        return self.inner.write_many(blobs, expect)

    def chunk_names(self) -> set[str]:
        return self.inner.chunk_names()

    def remove(self, rel: str, folder: bool = False) -> None:
        self.inner.remove(rel, folder)

    def listing(self, rel: str) -> dict[str, float]:
        return self.inner.listing(rel)


def _once(folder: EncryptedFolder, how: str, target: str) -> tuple[float, int, int]:
    store = Counting(folder.store)  # type: ignore[arg-type]
    inner, folder.store = folder.store, store
    start = time.perf_counter()
    if how == "reuse":
        moves.copy(folder, "big.bin", target)
    else:
        files.write_bytes(folder, target, files.read_bytes(folder, "big.bin"))
    took = time.perf_counter() - start
    folder.store = inner
    return took, store.read, store.sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = EncryptedFolder.create(MemoryStore(), "bench", b"pw", KdfParams(n=2**10), Counters())
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "big.bin"
        local.write_bytes(os.urandom(args.mib * 1024 * 1024))
        upload.put_file(folder, local, "big.bin")
    runs: dict[str, list[tuple[float, int, int]]] = {"reuse": [], "reseal": []}
    for i in range(args.rounds):  # interleaved: the shared machine's load falls on both alike
        for how in runs:
            runs[how].append(_once(folder, how, f"{how}-{i}.bin"))
    rows = []
    for how, label in (("reuse", "chunks reused (moves.copy)"), ("reseal", "decrypt + seal again")):
        took = statistics.median(r[0] for r in runs[how])
        read, sent = runs[how][-1][1], runs[how][-1][2]
        rows.append(f"| {label} | {took:.3f} | {read / 1e6:.2f} | {sent / 1e3:.1f} |")
    text = "\n".join(
        [
            f"# A copy of a {args.mib} MiB file inside one encrypted folder",
            "",
            f"`.venv/bin/python bench/crypto_cp_bench.py --mib {args.mib} --rounds {args.rounds}`"
            " (in-memory store; median wall time of the rounds, interleaved).",
            "",
            "| copy | seconds | MB read | KB sent |",
            "| --- | ---: | ---: | ---: |",
            *rows,
            "",
            "Both send about the same (the chunks are convergent, so the reseal's are deduplicated);",
            "the reseal reads and decrypts every chunk and seals it again.",
            "",
        ]
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
