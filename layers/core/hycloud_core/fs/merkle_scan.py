"""A user's Merkle tree recomputed from the namespace on EFS, the source of truth.

Upkeep compares it with the hashes kept in DynamoDB (store/merkle_records.py) and repairs
them; tests use it as the reference. Files hash by the content hash of content.py: a link
file names it, a small file's bytes give it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..linkfile import LinkFile, is_link_mode
from ..merkle import Entry, FileEntry, Node, build_tree, entries_from_directory
from ..merkle.tree import content_digest_file
from .namespace import TMP_PREFIX, Namespace


def namespace_file(path: Path, st: os.stat_result) -> FileEntry | None:
    """A namespace file's entry; temporary files of unfinished writes are not part of the tree."""
    if path.name.startswith(TMP_PREFIX):
        return None
    if is_link_mode(st.st_mode):
        link = LinkFile.from_bytes(path.read_bytes())
        return FileEntry(bytes.fromhex(link.content_hash), link.mtime)
    return FileEntry(content_digest_file(path), st.st_mtime)


def namespace_entries(ns: Namespace) -> dict[str, Entry]:
    return entries_from_directory(ns.root, namespace_file)


def namespace_tree(ns: Namespace) -> Node:
    return build_tree(namespace_entries(ns))
