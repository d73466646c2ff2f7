"""A Bloom filter over content hashes: the collector's mark set in bounded memory (seed 003).

A false positive only keeps an unlinked object one more round; there are no false negatives,
so a linked object is never reclaimed. The k bit positions come from one 16-byte blake2b of
the key by double hashing.
"""

from __future__ import annotations

import hashlib
import math


class BloomFilter:
    def __init__(self, expected: int, fp_rate: float = 0.001) -> None:
        expected = max(expected, 1)
        self.bits = max(64, int(-expected * math.log(fp_rate) / math.log(2) ** 2))
        self.k = max(1, round(self.bits / expected * math.log(2)))
        self.array = bytearray((self.bits + 7) // 8)

    def _positions(self, key: str) -> list[int]:
        digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
        h1 = int.from_bytes(digest[:8], "big")
        h2 = int.from_bytes(digest[8:16], "big") | 1
        return [(h1 + i * h2) % self.bits for i in range(self.k)]

    def add(self, key: str) -> None:
        for p in self._positions(key):
            self.array[p // 8] |= 1 << (p % 8)

    def __contains__(self, key: str) -> bool:
        return all(self.array[p // 8] & (1 << (p % 8)) for p in self._positions(key))
