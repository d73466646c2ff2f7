"""The user namespace on EFS: small files, directories and (later) link files."""

from .namespace import Entry, Namespace

__all__ = ["Entry", "Namespace"]
