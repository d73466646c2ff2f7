"""Delta and patch stream: memory stays far below the size of the new file."""

import hashlib
import io
import random
import tracemalloc

from hycloud_core.delta import delta, patch, signature_bytes

OLD = random.Random(1).randbytes(1 << 20)
COPIES = 40  # a 40 MiB new file that is never held in memory


class EditedCopies(io.RawIOBase):
    """Reads as COPIES edited copies of OLD, generated on the fly."""

    def __init__(self) -> None:
        self.copy = 0
        self.buf = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if not self.buf:
            if self.copy == COPIES:
                return 0
            c = self.copy
            self.buf = memoryview(OLD[: 1000 * c] + b"edit %d" % c + OLD[1000 * c + 7 :])
            self.copy += 1
        n = min(len(b), len(self.buf))
        b[:n] = self.buf[:n]
        self.buf = self.buf[n:]
        return n


class HashingSink:
    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data) -> int:
        self.sha.update(data)
        self.size += len(data)
        return len(data)


def expected_sha() -> tuple[str, int]:
    src, sink = EditedCopies(), HashingSink()
    while chunk := src.read(1 << 20):
        sink.write(chunk)
    return sink.sha.hexdigest(), sink.size


def test_delta_and_patch_stream_a_large_file():
    sig = signature_bytes(OLD, 4096)
    tracemalloc.start()
    try:
        d = io.BytesIO()
        stats = delta(sig, io.BufferedReader(EditedCopies(), 1 << 16), d)
        _, delta_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        sink = HashingSink()
        d.seek(0)
        patch(io.BytesIO(OLD), d, sink)
        _, patch_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    digest, size = expected_sha()
    assert (sink.sha.hexdigest(), sink.size) == (digest, size)
    assert stats.new_size == size > (COPIES - 1) << 20
    assert stats.literal_bytes < COPIES * 2 * 4096
    print(f"peak traced memory: delta {delta_peak >> 20} MiB, patch {patch_peak >> 20} MiB")
    assert delta_peak < 16 << 20, delta_peak  # vs a 40 MiB new file
    assert patch_peak < 16 << 20, patch_peak
