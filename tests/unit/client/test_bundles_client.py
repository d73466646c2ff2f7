"""The SDK's bundling: how files are grouped, and that a failed file is sent once more, then reported.

The cloud is played by a small in-memory stand-in that unpacks each bundle with the real format
code; the end-to-end tests (tests/e2e/test_bundles.py) run the same paths against the deployment.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from hycloud.sdk import bundles
from hycloud.transfer.config import DEFAULT
from hycloud_core import bundle
from hycloud_core.errors import HyCloudError


class Cloud:
    """Answers POST /v1/bundles; `fail` says which calls (by number) are lost, and which paths
    are refused every time."""

    def __init__(self, lost_calls: set[int] = frozenset(), refused: set[str] = frozenset()) -> None:
        self.calls, self.lost_calls, self.refused, self.stored = 0, lost_calls, refused, {}
        self.http = self
        self.small_file_threshold = 1000
        self.transfer = DEFAULT

    def json(self, method: str, route: str, data: bytes, **_: object) -> dict:
        self.calls += 1
        if self.calls in self.lost_calls:
            raise HyCloudError("lost", code="internal-error", status=500)
        answer = []
        for member, payload in bundle.unpack(data).files:
            if member.path in self.refused:
                error = {"code": "quota-exceeded", "message": "no room", "status": 403}
                answer.append({"path": member.path, "status": "error", "error": error})
                continue
            self.stored[member.path] = payload
            sha = hashlib.sha256(payload).hexdigest()
            answer.append(
                {"path": member.path, "status": "ok", "size": len(payload), "storage": "small", "sha256": sha}
            )
        return {"files": answer}


def _pairs(tmp_path: Path, n: int, size: int = 10) -> list[tuple[Path, str]]:
    out = []
    for i in range(n):
        f = tmp_path / f"f{i}"
        f.write_bytes(bytes([i % 256]) * size)
        out.append((f, f"/d/f{i}"))
    return out


def test_groups_respect_member_and_byte_limits(tmp_path):
    items = [bundles._Upload(i, tmp_path, f"/f{i}", 3_000_000, 0.0, 0o644) for i in range(7)]
    groups = list(bundles._groups(items))
    assert all(sum(i.size for i in g) <= bundles.RAW or len(g) == 1 for g in groups)
    assert sorted(i.index for g in groups for i in g) == list(range(7))
    many = [bundles._Upload(i, tmp_path, f"/f{i}", 10, 0.0, 0o644) for i in range(1000)]
    sizes = [len(g) for g in bundles._groups(many)]
    assert max(sizes) <= bundles.MEMBERS and sum(sizes) == 1000
    few = [bundles._Upload(i, tmp_path, f"/f{i}", 10, 0.0, 0o644) for i in range(10)]
    assert len(list(bundles._groups(few))) == 1  # too few to be worth several requests


def test_a_lost_bundle_is_sent_again_and_every_file_arrives(tmp_path):
    cloud = Cloud(lost_calls={1})
    pairs = _pairs(tmp_path, 10)
    results = bundles.put_files(cloud, pairs)
    assert [r["status"] for r in results] == ["ok"] * 10
    assert cloud.calls == 2 and len(cloud.stored) == 10
    assert results[3]["content_hash"] and results[3]["mode"] == "small" and "sha256" not in results[3]


def test_a_file_refused_twice_is_reported_and_the_others_stored(tmp_path):
    cloud = Cloud(refused={"/d/f2"})
    results = bundles.put_files(cloud, _pairs(tmp_path, 5))
    assert [r["status"] for r in results] == ["ok", "ok", "error", "ok", "ok"]
    assert results[2]["code"] == "quota-exceeded" and results[2]["http_status"] == 403
    assert cloud.calls == 2  # the refused file was re-queued once, alone
    try:
        bundles.raise_first_error(results)
    except HyCloudError as err:
        assert err.status == 403 and err.code == "quota-exceeded" and "/d/f2" in err.message
    else:
        raise AssertionError("no error raised")


def test_hostile_remote_paths_and_missing_local_files_fail_before_sending(tmp_path):
    cloud = Cloud()
    results = bundles.put_files(cloud, [(tmp_path / "missing", "/d/m"), (tmp_path, "../x")])
    assert [r["code"] for r in results] == ["no-such-local-file", "invalid-path"]
    assert cloud.calls == 0


def test_a_bundles_root_is_the_folder_all_its_files_are_in():
    assert bundles._root(["/a/b/x", "/a/b/y"]) == "/a/b"
    assert bundles._root(["/a/b/x", "/a/c/d/y"]) == "/a"
    assert bundles._root(["/x", "/a/y"]) == "/"
