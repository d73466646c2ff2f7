"""Usage measured by walking a namespace with small files, directories and link files."""

from __future__ import annotations

import os

import pytest

from hycloud_core.cost import measure_namespace, shares
from hycloud_core.fs import Namespace
from hycloud_core.fs.namespace import TMP_PREFIX
from hycloud_core.linkfile import LinkFile

KiB, GiB = 1024, 1024**3


@pytest.fixture
def ns(tmp_path):
    ns = Namespace(str(tmp_path / "ns"), "alice")
    ns.write("/zero", b"")
    ns.write("/d/hundred", b"x" * 100, parents=True)
    ns.write("/d/e/five-k", b"y" * 5000, parents=True)
    links = {
        "/big": LinkFile("h1", 3 * GiB, 1.0),
        "/d/big-copy": LinkFile("h1", 3 * GiB, 2.0),
        "/d/e/other": LinkFile("h2", 10 * GiB + 1, 3.0, chunk_size=4096),
    }
    for path, link in links.items():
        ns.write_link(path, link)
    (tmp_path / "ns" / "alice" / f"{TMP_PREFIX}upload").write_bytes(b"z" * 9000)  # in flight
    os.symlink("/etc/passwd", tmp_path / "ns" / "alice" / "escape")
    return ns, links


def test_walk_counts_efs_and_s3_with_link_sizes_from_json(ns):
    namespace, links = ns
    usage, builder = measure_namespace(namespace, "alice")
    link_bytes = sum(len(link.to_bytes()) for link in links.values())
    assert (usage.efs_files, usage.efs_dirs, usage.efs_bytes) == (3, 3, 5100)
    assert (usage.link_files, usage.link_file_bytes) == (3, link_bytes)
    assert (usage.s3_objects, usage.s3_bytes) == (2, 13 * GiB + 1)
    assert usage.s3_logical_bytes == 16 * GiB + 1 and usage.dedup_saved_bytes == 3 * GiB
    assert usage.efs_data_metered_bytes == 4 * KiB + 4 * KiB + 8 * KiB
    assert usage.efs_metadata_metered_bytes == 3 * 6 * KiB + 3 * 2 * KiB + 3 * 6 * KiB
    assert usage.large_efs_data_bytes == 16 * GiB + 4 * KiB
    assert usage.logical_bytes == 5100 + 16 * GiB + 1
    assert dict(builder.refs) == {"h1": 2, "h2": 1}
    assert usage.record_bytes > 6 * 100  # six file records, 100 bytes of overhead each at least


def test_shares_split_content_by_references(ns):
    namespace, _ = ns
    _, builder = measure_namespace(namespace, "alice")
    shared = shares(builder, {"h1": 5, "h2": 1})
    assert (shared.shared_objects, shared.shared_bytes) == (1, 3 * GiB)
    assert shared.attributed_bytes == pytest.approx(3 * GiB * 2 / 5 + 10 * GiB + 1)
    alone = shares(builder, {})
    assert alone.shared_objects == 0 and alone.attributed_bytes == 13 * GiB + 1


def test_empty_namespace_is_one_directory(tmp_path):
    usage, _ = measure_namespace(Namespace(str(tmp_path), "bob"), "bob")
    assert usage.efs_dirs == 1 and usage.files == 0 and usage.efs_metered_bytes == 6 * KiB


def test_sticky_file_that_is_not_a_link_counts_as_data(tmp_path):
    namespace = Namespace(str(tmp_path), "carol")
    namespace.write("/odd", b'{"not": "a link"}')
    os.chmod(namespace.host("/odd"), 0o640 | 0o1000)  # sticky, like a link file
    usage, _ = measure_namespace(namespace, "carol")
    assert (usage.efs_files, usage.efs_bytes, usage.link_files) == (1, 17, 0)
