"""The user namespace on EFS and the filesystem operations over EFS, S3 and DynamoDB."""

from .namespace import Entry, Namespace
from .operations import FileSystem

__all__ = ["Entry", "FileSystem", "Namespace"]
