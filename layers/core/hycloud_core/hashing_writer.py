"""A rebuilt file written front to back while its hashes are taken, with no second read of it.

A delta's patch (client download, cloud upload) makes the new version once, as a stream: its
content hash must be checked before the version is used, and the cloud keeps its plain sha256
too. Taken on the thread that decodes, each hash is another full pass on one core; here whole
8 MiB parts are hashed on the shared pool (content.hash_pool; hashlib lets go of the GIL for them) and the bytes are written,
and the plain sha256 taken, on a thread of their own, so both cores work while the next window
decodes. At most DEPTH pieces wait, so memory stays bounded.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable, Sequence

from .content import PartHasher, hash_pool

DEPTH = 2  # pieces (a decoded window each) written behind the one being made


class HashingWriter:
    """Writes each piece to every one of `writes`, in order, on a thread of its own; takes the
    content hash (`parts`) and the plain sha256 (`sha256`) of what passes. Call close() before
    reading either: it waits for everything and raises what a write raised."""

    def __init__(
        self, writes: Sequence[Callable[[bytes], object]], parts: bool = True, sha256: bool = False
    ) -> None:
        self.writes = list(writes)
        self.hasher = PartHasher(hash_pool()) if parts else None
        self.whole = hashlib.sha256() if sha256 else None
        self.error: BaseException | None = None
        self.pending: queue.Queue[bytes | None] = queue.Queue(maxsize=DEPTH)
        self.thread = threading.Thread(target=self._drain, name="hycloud-write", daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while (data := self.pending.get()) is not None:
            if self.error is not None:
                continue  # keep draining so write() never blocks; close() reports it
            try:
                if self.whole is not None:
                    self.whole.update(data)
                for write in self.writes:
                    write(data)
            except BaseException as err:  # noqa: BLE001 - handed to the writer's thread by close()
                self.error = err

    def write(self, data: bytes) -> int:
        if self.error is not None:
            raise self.error
        data = bytes(data)
        if self.hasher is not None:
            self.hasher.update(data)
        self.pending.put(data)
        return len(data)

    def close(self) -> None:
        """Wait until everything is written and hashed; raise what writing raised."""
        self.pending.put(None)
        self.thread.join()
        if self.hasher is not None:
            self.hasher.digests()  # every part hashed
        if self.error is not None:
            raise self.error

    @property
    def content_hash(self) -> str:
        assert self.hasher is not None, "made with parts=False"
        return self.hasher.hexdigest()

    @property
    def sha256(self) -> str:
        assert self.whole is not None, "made with sha256=False"
        return self.whole.hexdigest()
