"""How each service counts stored bytes, which is not the same as the bytes a user wrote.

EFS meters every object (regular file, directory, link file) as 2 KiB of metadata for its inode
plus its data rounded up to the next 4 KiB, with at least one 4 KiB block ("How Amazon EFS
reports file system and object sizes", EFS user guide). A 100-byte file is therefore billed as
6 KiB, which is why small files are cheap in bytes but not free. A directory's data is its
entries; we count one 4 KiB block, which holds a few dozen entries and understates very large
directories. S3 Standard meters the object's size (no minimum size; a per-object overhead is
configurable in prices.json and zero at list price). DynamoDB meters each item's raw bytes plus
100 bytes of per-item overhead.
"""

from __future__ import annotations

from ..constants import KiB

EFS_METADATA_BYTES = 2 * KiB
EFS_BLOCK_BYTES = 4 * KiB
DIR_DATA_BYTES = EFS_BLOCK_BYTES
# Typical size of a link file's JSON, where only file records or sizes are known; any size up to
# 4 KiB meters the same.
LINK_FILE_BYTES_ESTIMATE = 220
STUB_BYTES_ESTIMATE = 300  # a packed file's stub (docs/SEGMENTS.md), where only its record is known
# Amazon S3 Files keeps files smaller than this on its file-system storage (prices.json agrees)
S3FILES_IMPORT_THRESHOLD = 128 * KiB
# EFS lifecycle management and S3 Intelligent-Tiering never move a smaller file or object out of
# their standard tier (EFS user guide, S3 pricing); metadata always stays in EFS Standard
MIN_TIERED_BYTES = 128 * KiB

DYNAMODB_ITEM_OVERHEAD = 100
# Attribute names and values of a file record besides its keys: kind, size, sha256 or content
# hash (64 hex), mtime.
FILE_RECORD_ATTR_BYTES = 110
# A whole OBJ# record: keys, state, refs, size, s3_key, created.
OBJECT_RECORD_BYTES = DYNAMODB_ITEM_OVERHEAD + 200


def efs_data_bytes(size: int) -> int:
    """Data bytes EFS meters for a regular file of `size` bytes (at least one block)."""
    blocks = max(1, -(-size // EFS_BLOCK_BYTES))
    return blocks * EFS_BLOCK_BYTES


def efs_file_bytes(size: int) -> int:
    """All bytes EFS meters for a regular file: inode metadata plus rounded data."""
    return EFS_METADATA_BYTES + efs_data_bytes(size)


def efs_dir_bytes() -> int:
    return EFS_METADATA_BYTES + DIR_DATA_BYTES


def file_record_bytes(user: str, path: str) -> int:
    """Estimated billable size of a file's `NS#<user>` / `F#<path>` record."""
    keys = len("pk") + len("sk") + len(f"NS#{user}") + len(f"F#{path}".encode())
    return DYNAMODB_ITEM_OVERHEAD + keys + FILE_RECORD_ATTR_BYTES
