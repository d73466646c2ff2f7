"""What a user's namespace occupies in EFS, S3 and DynamoDB, measured by walking it.

Large files are measured from their link files: the size in the JSON, not the few hundred bytes
on disk (those bytes are metered too, as EFS metadata). S3 bytes count each distinct content
once per user (`s3_bytes`) beside the sum over paths (`s3_logical_bytes`), so copies and
duplicate uploads show as savings. Packed cold small files (docs/SEGMENTS.md) are a kind of
their own: their bytes are in S3 segments, a stub of a few hundred bytes stands at their path in
EFS (metered like a link file), so they are counted at their own size and never as small EFS
files the size of their stub. Content shared with other users is stored once for the whole
deployment; `shares` (from the `OBJ#` reference counts) says how much of it is this user's.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..fs.namespace import TMP_PREFIX, Namespace
from ..fs.segments_format import Stub, stub_from_bytes
from ..linkfile import LinkFile, is_link_mode
from . import metering as m


@dataclass(frozen=True)
class Usage:
    """Counts and bytes of one namespace (or any set of files) by where they are kept."""

    efs_files: int = 0  # small files stored in EFS
    efs_dirs: int = 0  # directories, the namespace root included
    efs_bytes: int = 0  # logical bytes of the small files
    link_files: int = 0  # large files, one link file each
    link_file_bytes: int = 0  # bytes of the link files' JSON
    efs_data_metered_bytes: int = 0  # small files' data, rounded to 4 KiB blocks
    efs_metadata_metered_bytes: int = 0  # inodes, directory blocks and link files
    s3_objects: int = 0  # distinct contents behind the link files
    s3_bytes: int = 0  # their bytes, each content once
    s3_logical_bytes: int = 0  # sum of large file sizes over paths
    large_efs_data_bytes: int = 0  # what the large files' data would meter in EFS
    record_bytes: int = 0  # estimated DynamoDB bytes of file and object records
    # files under Amazon S3 Files' import threshold (128 KiB), which it keeps on file-system storage
    s3files_small_files: int = 0
    s3files_small_bytes: int = 0
    # erasure-coded files: their blocks' bytes per instance region (each content once; in s3_bytes too)
    coded_files: int = 0
    coded_region_bytes: dict[str, int] = field(default_factory=dict)
    # what storage tiers may move (EFS lifecycle and S3 Intelligent-Tiering leave smaller files
    # and all metadata in their standard tier; cost/tiers.py)
    efs_tierable_files: int = 0  # small files of 128 KiB and more
    efs_tierable_data_bytes: int = 0  # their data, as EFS meters it
    s3_tierable_objects: int = 0  # distinct contents of 128 KiB and more
    s3_tierable_bytes: int = 0
    # packed cold small files: bytes in S3 segments, a stub each in EFS (docs/SEGMENTS.md)
    segment_files: int = 0  # packed files, one stub each
    segment_bytes: int = 0  # their sizes, summed over paths (logical)
    segment_stub_bytes: int = 0  # the stubs' JSON
    segment_stub_metered_bytes: int = 0  # the stubs as EFS meters them (inode and one block each)
    segment_objects: int = 0  # segment objects in S3
    # their bytes in S3: the distinct members the stubs name, or (`with_segment_records`) the
    # objects' whole members, dead ones awaiting compaction included
    segment_stored_bytes: int = 0
    segment_efs_data_bytes: int = 0  # what the packed files' data would meter back in EFS

    @property
    def files(self) -> int:
        return self.efs_files + self.link_files + self.segment_files

    @property
    def logical_bytes(self) -> int:
        return self.efs_bytes + self.s3_logical_bytes + self.segment_bytes

    @property
    def efs_metered_bytes(self) -> int:
        return self.efs_data_metered_bytes + self.efs_metadata_metered_bytes + self.segment_stub_metered_bytes

    @property
    def s3_stored_bytes(self) -> int:
        """Bytes in S3: large-file contents (each once) and this user's segments."""
        return self.s3_bytes + self.segment_stored_bytes

    @property
    def dedup_saved_bytes(self) -> int:
        return self.s3_logical_bytes - self.s3_bytes

    def to_dict(self) -> dict[str, Any]:
        derived = ("files", "logical_bytes", "efs_metered_bytes", "s3_stored_bytes", "dedup_saved_bytes")
        return {**asdict(self), **{name: getattr(self, name) for name in derived}}

    def region_costs(self, price_gb_month: float, gb_bytes: int) -> dict[str, float]:
        """Monthly storage of the coded blocks in each region, at the given S3 price."""
        return {
            r: round(b / gb_bytes * price_gb_month, 6) for r, b in sorted(self.coded_region_bytes.items())
        }


@dataclass
class UsageBuilder:
    """Accumulates files and directories one at a time; `build` freezes the totals."""

    user: str = ""
    counts: Counter[str] = field(default_factory=Counter)
    contents: dict[str, int] = field(default_factory=dict)  # content hash -> size
    refs: Counter[str] = field(default_factory=Counter)  # content hash -> link files of this user
    coded: dict[str, dict[str, int]] = field(default_factory=dict)  # content hash -> bytes per region
    members: dict[tuple[str, int], int] = field(default_factory=dict)  # (segment, offset) -> length

    def add_dir(self) -> None:
        self.counts["efs_dirs"] += 1
        self.counts["efs_metadata_metered_bytes"] += m.efs_dir_bytes()

    def _under_import_threshold(self, size: int) -> None:
        if size < m.S3FILES_IMPORT_THRESHOLD:
            self.counts["s3files_small_files"] += 1
            self.counts["s3files_small_bytes"] += size

    def add_small(self, size: int, path: str = "", owner: str | None = None) -> None:
        self._under_import_threshold(size)
        self.counts["efs_files"] += 1
        self.counts["efs_bytes"] += size
        self.counts["efs_data_metered_bytes"] += m.efs_data_bytes(size)
        self.counts["efs_metadata_metered_bytes"] += m.EFS_METADATA_BYTES
        self.counts["record_bytes"] += m.file_record_bytes(owner or self.user, path)
        if size >= m.MIN_TIERED_BYTES:
            self.counts["efs_tierable_files"] += 1
            self.counts["efs_tierable_data_bytes"] += m.efs_data_bytes(size)

    def add_large(
        self, size: int, content_hash: str, link_bytes: int, path: str = "", owner: str | None = None
    ) -> None:
        self._under_import_threshold(size)
        self.counts["link_files"] += 1
        self.counts["link_file_bytes"] += link_bytes
        self.counts["efs_metadata_metered_bytes"] += m.efs_file_bytes(link_bytes)
        self.counts["s3_logical_bytes"] += size
        self.counts["large_efs_data_bytes"] += m.efs_data_bytes(size)
        self.counts["record_bytes"] += m.file_record_bytes(owner or self.user, path)
        self.contents[content_hash] = size
        self.refs[content_hash] += 1

    def add_packed(self, stub: Stub, stub_bytes: int, path: str = "", owner: str | None = None) -> None:
        """A packed small file: its bytes in a segment (a copy's stub names the same member, stored
        once), its stub in EFS, its file record as any small file's."""
        self._under_import_threshold(stub.length)
        self.counts["segment_files"] += 1
        self.counts["segment_bytes"] += stub.length
        self.counts["segment_stub_bytes"] += stub_bytes
        self.counts["segment_stub_metered_bytes"] += m.efs_file_bytes(stub_bytes)
        self.counts["segment_efs_data_bytes"] += m.efs_data_bytes(stub.length)
        self.counts["record_bytes"] += m.file_record_bytes(owner or self.user, path)
        self.members[(stub.segment, stub.offset)] = stub.length

    def add_coded(self, content_hash: str, erasure: dict[str, Any]) -> None:
        """A large file stored as blocks: S3 holds the blocks (n/k of its size) across the regions."""
        regions: Counter[str] = Counter()
        for chunk in erasure.get("chunks", []):
            for block in chunk["blocks"]:
                regions[block["instance"]] += int(block["size"])
        self.counts["coded_files"] += 1
        self.coded[content_hash] = dict(regions)
        self.contents[content_hash] = sum(regions.values())

    def build(self) -> Usage:
        regions: Counter[str] = Counter()
        for per_region in self.coded.values():
            regions.update(per_region)
        return Usage(
            **self.counts,
            s3_objects=len(self.contents),
            s3_bytes=sum(self.contents.values()),
            s3_tierable_objects=sum(1 for n in self.contents.values() if n >= m.MIN_TIERED_BYTES),
            s3_tierable_bytes=sum(n for n in self.contents.values() if n >= m.MIN_TIERED_BYTES),
            coded_region_bytes=dict(regions),
            segment_objects=len({segment for segment, _offset in self.members}),
            segment_stored_bytes=sum(self.members.values()),
        )


def measure_namespace(ns: Namespace, user: str = "") -> tuple[Usage, UsageBuilder]:
    """Walk a namespace on EFS. Returns the usage and the builder (its per-content references)."""
    builder = UsageBuilder(user=user)
    _walk(ns.root, "", builder)
    return builder.build(), builder


def _walk(host_dir: str, path: str, builder: UsageBuilder) -> None:
    builder.add_dir()
    with os.scandir(host_dir) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        if entry.name.startswith(TMP_PREFIX):
            continue
        st = entry.stat(follow_symlinks=False)
        child = f"{path}/{entry.name}"
        if stat_mod.S_ISDIR(st.st_mode):
            _walk(entry.path, child, builder)
        elif is_link_mode(st.st_mode):
            _add_marked(entry.path, st.st_size, child, builder)
        elif stat_mod.S_ISREG(st.st_mode):
            builder.add_small(st.st_size, child)


def _add_marked(host_path: str, size: int, path: str, builder: UsageBuilder) -> None:
    """A sticky-bit file: a link file, a segment stub, or (neither magic) plain data."""
    with open(host_path, "rb") as f:
        raw = f.read()
    if stub := stub_from_bytes(raw):
        builder.add_packed(stub, len(raw), path)
        return
    try:
        link = LinkFile.from_bytes(raw)
    except (ValueError, TypeError):
        builder.add_small(size, path)
        return
    builder.add_large(link.size, link.content_hash, len(raw), path)
    if link.erasure:
        builder.add_coded(link.content_hash, link.erasure)


def usage_from_sizes(sizes: Iterable[int], threshold: int, dirs: int = 1) -> Usage:
    """Usage of files with these sizes laid out by the size threshold, all contents distinct.

    For models and benchmarks of a file-size distribution without building a filesystem.
    """
    builder = UsageBuilder()
    for _ in range(dirs):
        builder.add_dir()
    for i, size in enumerate(sizes):
        if size < threshold:
            builder.add_small(size)
        else:
            builder.add_large(size, f"synthetic-{i}", m.LINK_FILE_BYTES_ESTIMATE)
    return builder.build()


@dataclass(frozen=True)
class SharedContent:
    """This user's part of contents that the deployment stores once for all their references."""

    shared_objects: int  # contents also referenced outside this user's namespace
    shared_bytes: int
    attributed_bytes: float  # sum of size × (this user's refs / all refs)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def shares(builder: UsageBuilder, total_refs: dict[str, int]) -> SharedContent:
    """Split each content's bytes by reference: what a fair bill would charge this user for S3.

    `total_refs` maps content hash to the deployment-wide reference count (`OBJ#` refs); a hash
    missing from it (record being deleted, or not yet committed) is attributed wholly to the user.
    """
    shared_objects = shared_bytes = 0
    attributed = 0.0
    for content_hash, size in builder.contents.items():
        mine = builder.refs[content_hash]
        total = max(mine, total_refs.get(content_hash, mine))
        if total > mine:
            shared_objects += 1
            shared_bytes += size
        attributed += size * mine / total
    return SharedContent(shared_objects, shared_bytes, attributed)
