"""Mark-and-sweep reclamation of large-file content (seed 003's Bloom-filter collection).

Why it is safe. The collector first reads every object record (its `gen`), then marks every
content hash that any link file on EFS (the trash and snapshots included), file record, pending upload or kept version names, then reclaims an
object only if it is unmarked, was not touched within `grace_s` before the round began, is not
kept as an old version, and still has the `gen` it read (objects.py). Every operation that makes
a link touches the object first, and finishes within the grace period, so:
- a link made before the round either was seen by the mark or touched the object within the grace;
- a link made during the round touched the object after its `gen` was read, so the reclaim fails;
- a file moved into an already-marked folder touched its object (file move); a whole folder moved
  during the mark bumps the tree epoch, and a round that sees the epoch change reclaims nothing.
A false positive of the Bloom filter keeps an object one more round; nothing is ever lost.

It also deletes S3 objects under `objects/` that no record or pending upload names (a crash
between storing and recording), once they are older than the grace period.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ..linkfile import link_files_under
from .bloom import BloomFilter
from .objects import LIVE, Objects
from .pages import scan_items
from .records import _plain
from .version_records import PREFIX as VERSION_PREFIX


def trash_root(namespaces_dir: str) -> str:
    """The users' trash areas beside the namespaces (fs/trash.py keeps what is in them)."""
    return os.path.join(os.path.dirname(os.path.normpath(namespaces_dir)), "trash")


def snapshot_root(namespaces_dir: str) -> str:
    """The users' snapshot areas beside the namespaces (fs/snapshots.py keeps what is in them)."""
    return os.path.join(os.path.dirname(os.path.normpath(namespaces_dir)), "snapshots")


def kept_areas(namespaces_dir: str) -> list[str]:
    """Every folder whose link files keep content: the namespaces, the trash and the snapshots
    (the large files' collector and the coded blocks' sweep mark the same)."""
    folders = [namespaces_dir, trash_root(namespaces_dir), snapshot_root(namespaces_dir)]
    return [f for f in folders if os.path.isdir(f)]


EPOCH_KEY = {"pk": "GC#STATE", "sk": "TREE"}


def bump_tree_epoch(table: Any) -> None:
    """Say that a folder is moving: a collection round running now must not reclaim anything."""
    table.update_item(Key=EPOCH_KEY, UpdateExpression="ADD epoch :one", ExpressionAttributeValues={":one": 1})


def tree_epoch(table: Any) -> int:
    item = table.get_item(Key=EPOCH_KEY, ConsistentRead=True).get("Item") or {}
    return int(item.get("epoch", 0))


@dataclass
class Round:
    candidates: int = 0
    marked_links: int = 0
    reclaimed: list[str] = field(default_factory=list)
    orphans_deleted: list[str] = field(default_factory=list)
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Collector:
    def __init__(self, table: Any, objects: Objects, namespaces_dir: str, grace_s: int) -> None:
        self.table, self.objects, self.namespaces_dir, self.grace_s = table, objects, namespaces_dir, grace_s

    def run(self, now: float | None = None) -> Round:
        start = time.time() if now is None else now
        cutoff = start - self.grace_s
        result = Round()
        epoch = tree_epoch(self.table)
        objects, named = self._read_table()
        candidates = [o for o in objects if self._candidate(o, cutoff, start)]
        result.candidates = len(candidates)
        marks = BloomFilter(expected=2 * (len(objects) + len(named)) + 1000)
        for content_hash in named:
            marks.add(content_hash)
        result.marked_links = self._mark_efs(marks)
        if tree_epoch(self.table) != epoch:
            result.skipped = "a folder moved during the mark; next round"
            return result
        for obj in candidates:
            content_hash = obj["pk"].removeprefix("OBJ#")
            if content_hash not in marks and self.objects.reclaim(content_hash, obj.get("gen"), start):
                result.reclaimed.append(content_hash)
        for obj in objects:  # a reclaim a crash interrupted
            if obj.get("state") == "deleting" and obj.get("touched", 0) < cutoff:
                self.objects.finish_reclaim(obj["pk"].removeprefix("OBJ#"))
        result.orphans_deleted = self._delete_orphans(marks, {o["pk"] for o in objects}, cutoff)
        self._record_link_counts(objects, named, set(result.reclaimed))
        return result

    def _record_link_counts(
        self, objects: list[dict[str, Any]], named: Counter[str], reclaimed: set[str]
    ) -> None:
        """Store how many file records name each object: what usage reports split costs by.
        Informational only; nothing is kept or removed because of it."""
        for obj in objects:
            content_hash = obj["pk"].removeprefix("OBJ#")
            count = named.get(content_hash, 0)
            if obj.get("state") in LIVE and content_hash not in reclaimed and obj.get("links") != count:
                self._set_links(obj["pk"], count)

    def _set_links(self, pk: str, count: int) -> None:
        try:
            self.table.update_item(
                Key={"pk": pk, "sk": "OBJ"},
                UpdateExpression="SET links = :n",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":n": count},
            )
        except self.table.meta.client.exceptions.ConditionalCheckFailedException:
            pass  # reclaimed meanwhile

    def _read_table(self) -> tuple[list[dict[str, Any]], Counter[str]]:
        """Object records (with the `gen` each had before the mark) and the hashes that file
        records, pending uploads and kept versions (store/version_records.py) name, in one scan."""
        objects: list[dict[str, Any]] = []
        named: Counter[str] = Counter()
        for item in self._scan():
            pk = item["pk"]
            if pk.startswith("OBJ#"):
                objects.append(item)
            elif pk.startswith("NS#") and item.get("content_hash"):
                named[item["content_hash"]] += 1
            elif pk.startswith("UPLOAD#"):
                named[item["sk"]] += 0  # named (kept) but not a link
            elif pk.startswith(VERSION_PREFIX) and item.get("kind") == "large" and item.get("content_hash"):
                named[item["content_hash"]] += 0  # an earlier version, kept until upkeep drops its record
        return objects, named

    @staticmethod
    def _candidate(obj: dict[str, Any], cutoff: float, now: float) -> bool:
        return (
            obj.get("state") in LIVE
            and obj.get("touched", obj.get("created", 0)) < cutoff
            and max(obj.get("keep_until", 0), obj.get("expires", 0)) < now
        )

    # --- mark --------------------------------------------------------------------------------
    def _mark_efs(self, marks: BloomFilter) -> int:
        links = 0
        for content_hash in self._linked_on_efs():
            marks.add(content_hash)
            links += 1
        return links

    def _linked_on_efs(self) -> Iterator[str]:
        """Every content hash a link file names, in every namespace, every user's trash (a
        trashed file keeps its content until its item is purged: fs/trash.py) and every user's
        snapshots (until the snapshot is removed: fs/snapshots.py), retained history included.
        A link moved between namespace and trash during the walk bumped the tree epoch; a link
        copied into a snapshot touched its object first, as every copy does."""
        for folder in kept_areas(self.namespaces_dir):
            for link in link_files_under(folder):
                yield link.content_hash
                yield from (h for h, _ in link.history)

    def _scan(self) -> Iterator[dict[str, Any]]:
        return (_plain(i) for i in scan_items(self.table, ConsistentRead=True))

    # --- S3 objects without a record -----------------------------------------------------------
    def _delete_orphans(self, marks: BloomFilter, recorded: set[str], cutoff: float) -> list[str]:
        s3, bucket, deleted = self.objects.s3, self.objects.bucket, []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="objects/"):
            for obj in page.get("Contents", []):
                content_hash = obj["Key"].rsplit("/", 1)[-1]
                if f"OBJ#{content_hash}" in recorded or content_hash in marks:
                    continue
                if obj["LastModified"].timestamp() >= cutoff or self.objects.get(content_hash):
                    continue
                s3.delete_object(Bucket=bucket, Key=obj["Key"])
                deleted.append(content_hash)
        return deleted
