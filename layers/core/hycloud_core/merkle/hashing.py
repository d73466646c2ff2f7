"""The hash rules of the Merkle tree: seed 000 §III-D, eq. 9 and 10, with names kept at the parent
as git trees keep them ("+" is concatenation, H is MD5).

- file:        H(f)  = MD5("F" + C(f)), C(f) the content hash of content.py
  (sha256 over the sha256 of each 8 MiB part: one sha256 more for a small file).
  The paper hashes the content with the full path; here the path is left to the folders, so a
  file's hash is the same wherever it is and a move re-hashes nothing below what moved. The
  content *digest* lets a large file be hashed from its link file alone, without reading S3.
- coded file:  H(f)  = MD5(H(f0) + H(b_1) + ... + H(b_p))              (eq. 10)
               with H(f0) the file rule above and H(b_k) the block hashes.
- directory:   H(d)  = MD5("D" + Σ (name_i + NUL + H(c_i)))            (eq. 9)
               over its live children c_i in name order (files and folders alike); an empty
               folder's hash is MD5("D"). Its own name is in its parent's hash, not its own.

Equal hashes mean equal live content under equal names, wherever the folders are: so a folder
renamed or moved on one side shows up as one name gone and one name come with the same hash.
Deletion marks contribute nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def md5(*parts: bytes) -> bytes:
    h = hashlib.md5(usedforsecurity=False)
    for part in parts:
        h.update(part)
    return h.digest()


def file_hash(content_hash: bytes, blocks: Iterable[bytes] = ()) -> bytes:
    leaf = md5(b"F", content_hash)
    blocks = tuple(blocks)
    return md5(leaf, *blocks) if blocks else leaf


def dir_hash(children: Iterable[tuple[str, bytes]]) -> bytes:
    """A folder's hash from its live children's (name, hash) pairs, in any order."""
    h = hashlib.md5(b"D", usedforsecurity=False)
    for name, digest in sorted(children):
        h.update(name.encode())
        h.update(b"\0")
        h.update(digest)
    return h.digest()


def name_of(path: str) -> str:
    """The last part of a path, what a folder's hash names a child by ("" for the root)."""
    return path.rsplit("/", 1)[-1]
