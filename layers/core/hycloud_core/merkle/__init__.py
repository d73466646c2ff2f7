"""Merkle trees for filesystem consistency between client and instances (seed 000, §III-D)."""

from hycloud_core.merkle.entries import DirEntry, Entry, FileEntry, Tombstone, normalise_path
from hycloud_core.merkle.exchange import Diff, Difference, LevelExchange, NodeSummary, Responder, compare
from hycloud_core.merkle.tree import Node, build_tree, entries_from_directory, tree_from_directory

__all__ = [
    "Diff",
    "Difference",
    "DirEntry",
    "Entry",
    "FileEntry",
    "LevelExchange",
    "Node",
    "NodeSummary",
    "Responder",
    "Tombstone",
    "build_tree",
    "compare",
    "entries_from_directory",
    "normalise_path",
    "tree_from_directory",
]
