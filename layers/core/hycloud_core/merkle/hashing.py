"""The hash rules of seed 000 §III-D, eq. 9 and 10 ("+" is concatenation, H is MD5).

- file:        H(f)  = MD5(C(f) + path), C(f) the content hash of content.py
  (sha256 over the sha256 of each 8 MiB part: one sha256 more for a small file).
  The paper hashes content and full path; hashing the content *digest* with the
  path keeps that meaning while letting a MOVE re-hash a large file from its
  link file alone, without reading the object from S3.
- coded file:  H(f)  = MD5(H(f0) + H(b_1) + ... + H(b_p))              (eq. 10)
               with H(f0) the file rule above and H(b_k) the block hashes.
- directory:   H(d)  = MD5(H(d0) + Σ H(f_i) + Σ H(d_j))                (eq. 9)
               H(d0) = MD5(full path of d); H(d) = H(d0) when d is empty.
               Files and subdirectories are each taken in name order.

Deletion marks contribute nothing: equal hashes mean equal live content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def md5(*parts: bytes) -> bytes:
    h = hashlib.md5(usedforsecurity=False)
    for part in parts:
        h.update(part)
    return h.digest()


def file_hash(path: str, content_hash: bytes, blocks: Iterable[bytes] = ()) -> bytes:
    leaf = md5(content_hash, path.encode())
    blocks = tuple(blocks)
    return md5(leaf, *blocks) if blocks else leaf


def dir_hash(path: str, file_hashes: Iterable[bytes], dir_hashes: Iterable[bytes]) -> bytes:
    own = md5(path.encode())
    children = (*file_hashes, *dir_hashes)
    return md5(own, *children) if children else own
