"""Small-file bundles on the deployment: `put -r`/`get -r` move many small files in a handful of
requests, byte-exact with their times and modes; each member of a bundle commits (or fails) on
its own; malformed and oversized bundles are refused whole with a 4xx and store nothing."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import time
from pathlib import Path

import pytest

from hycloud_core import bundle
from tests.e2e.conftest import HYCLOUD, User, _make_user
from tests.e2e.fault_proxy import FaultProxy
from tests.e2e.invariants import efs_files, merkle_tree_on_efs, record_key, records_disagreeing

pytestmark = pytest.mark.e2e
SMALL, LARGE = 100, 2
OCTET = {"Content-Type": "application/octet-stream"}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cli(user: User, proxy: FaultProxy, *args: str) -> subprocess.CompletedProcess:
    env = user.cli_env(**proxy.env())
    result = subprocess.run([HYCLOUD, *args], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def api_requests(proxy: FaultProxy) -> list[str]:
    """Routes of the requests that reached the API (not presigned S3 transfers)."""
    return [
        x.route.split("/_user_request_/v1", 1)[-1] for x in proxy.forwarded if "/_user_request_/" in x.route
    ]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """100 small files (0 B to 30 KiB, various modes and times) in nested folders, 2 large ones
    and an empty folder."""
    root = tmp_path_factory.mktemp("bundles") / "src"
    for i in range(SMALL):
        f = root / f"d{i % 4}" / ("deep" if i % 3 else "") / f"f{i}.txt"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(os.urandom((i * 307) % 30_000))
        f.chmod(0o755 if i % 5 == 0 else 0o640)
        os.utime(f, (1_600_000_000 + i, 1_600_000_000 + i * 1.5))
    for i in range(LARGE):
        f = root / f"big{i}.bin"
        f.write_bytes(os.urandom(2 * 1024 * 1024 + 1000 * (i + 1)))
        os.utime(f, (1_650_000_000, 1_650_000_000 + i))
    (root / "empty" / "inner").mkdir(parents=True)
    return root


def files_of(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}


def assert_same_files(src: Path, dst: Path) -> None:
    want, got = files_of(src), files_of(dst)
    assert sorted(got) == sorted(want)
    for rel, p in want.items():
        q = got[rel]
        assert sha(q.read_bytes()) == sha(p.read_bytes()), rel
        assert q.stat().st_mtime == pytest.approx(p.stat().st_mtime, abs=1e-3), rel
        assert q.stat().st_mode & 0o777 == p.stat().st_mode & 0o777, rel


@pytest.mark.slow
def test_put_r_and_get_r_move_a_tree_in_a_handful_of_requests(alice, tree, tmp_path):
    with FaultProxy() as proxy:
        out = json.loads(cli(alice, proxy, "--json", "put", "-r", str(tree), "/bundled").stdout)
    assert len(out) == SMALL + LARGE
    assert {e["path"] for e in out} == {f"/bundled/{rel}" for rel in files_of(tree)}
    routes = api_requests(proxy)
    assert 1 <= routes.count("/bundles") <= 8, routes
    small_puts = [r for r in routes if r == "/files"]
    assert len(small_puts) <= LARGE and len(routes) < 30, routes  # not one request per small file
    # in the cloud: each small file's bytes, time and mode on EFS
    ns = alice.ns_dir() / "bundled"
    for rel, p in files_of(tree).items():
        if p.stat().st_size <= 2 * 1024 * 1024:
            stored = ns / rel
            assert sha(stored.read_bytes()) == sha(p.read_bytes()), rel
            assert stored.stat().st_mtime == pytest.approx(p.stat().st_mtime, abs=1e-3)
            assert stored.stat().st_mode & 0o777 == (p.stat().st_mode & 0o777) | 0o600
    assert (ns / "empty" / "inner").is_dir()

    back = tmp_path / "back"
    with FaultProxy() as proxy:
        got = json.loads(cli(alice, proxy, "--json", "get", "-r", "/bundled", str(back)).stdout)
    assert len(got) == SMALL + LARGE
    assert_same_files(tree, back)
    assert (back / "empty" / "inner").is_dir()
    routes = api_requests(proxy)
    assert routes.count("/bundles/download") <= 4 and len(routes) < 30, routes


def test_sdk_put_files_and_get_files_report_each_file(alice, tmp_path):
    from hycloud.sdk import bundles

    client = alice.sdk()
    client.mkdir("/pf/blocked", parents=True)
    local = []
    for i in range(5):
        f = tmp_path / f"s{i}"
        f.write_bytes(f"small {i}".encode() * (i + 1))
        local.append(f)
    pairs = [(f, f"/pf/{f.name}") for f in local] + [
        (local[0], "/pf/blocked"),
        (tmp_path / "gone", "/pf/gone"),
    ]
    results = bundles.put_files(client, pairs)
    assert [r["status"] for r in results] == ["ok"] * 5 + ["error", "error"]
    assert results[0]["content_hash"] and results[0]["size"] == len(local[0].read_bytes())
    assert results[5]["code"] == "is-a-directory" and results[5]["http_status"] == 409
    assert results[6]["code"] == "no-such-local-file"

    back = tmp_path / "back"
    got = bundles.get_files(
        client, [(f"/pf/{f.name}", back / f.name) for f in local] + [("/pf/nope", back / "x")]
    )
    assert [r["status"] for r in got] == ["ok"] * 5 + ["error"]
    assert got[-1]["code"] == "not-found" and not (back / "x").exists()
    for f in local:
        assert (back / f.name).read_bytes() == f.read_bytes()


def test_a_bad_member_is_reported_and_the_others_commit(alice):
    api = alice.api()
    good, other, wrong = b"good bytes", b"other bytes", b"tampered"
    alice.sdk().mkdir("/bad-members/folder", parents=True)
    members = [
        (bundle.member_of("/bad-members/good.txt", good), good),
        (bundle.member_of("../x", good), good),
        (bundle.member_of("/bad-members/hash.txt", b"original"), wrong),  # same size, other bytes
        (bundle.member_of("/bad-members/folder", other), other),
        (bundle.member_of("/bad-members/other.txt", other, mtime=1_500_000_000, mode=0o700), other),
    ]
    r = api.call("POST", "/v1/bundles", data=bundle.pack(members), headers=OCTET)
    assert r.status_code == 200, r.text
    files = r.json()["files"]
    assert [f["status"] for f in files] == ["ok", "error", "error", "error", "ok"]
    assert [f["error"]["status"] for f in files if f["status"] == "error"] == [400, 400, 409]
    assert [f["error"]["code"] for f in files if f["status"] == "error"] == [
        "invalid-path",
        "hash-mismatch",
        "is-a-directory",
    ]
    assert files[0]["sha256"] == sha(good) and files[4]["mode"] == 0o700
    ns = alice.ns_dir() / "bad-members"
    assert (ns / "good.txt").read_bytes() == good and (ns / "other.txt").read_bytes() == other
    assert (ns / "other.txt").stat().st_mtime == 1_500_000_000
    assert not (ns / "hash.txt").exists() and (ns / "folder").is_dir()
    assert not (alice.ns_dir().parent / "x").exists() and not (alice.ns_dir() / "x").exists()
    table = alice.deployment.client("dynamodb")
    name = alice.deployment.outputs["TableName"]

    def record(path: str) -> dict | None:
        key = record_key(alice.deployment, alice.ns_key, path)
        return table.get_item(TableName=name, Key=key, ConsistentRead=True).get("Item")

    assert record("/bad-members/good.txt")["sha256"]["S"] == sha(good)
    assert record("/bad-members/hash.txt") is None


@pytest.mark.parametrize("first", ["file", "child"])
def test_members_whose_paths_nest_commit_in_order_and_the_second_is_a_409(alice, first):
    """`/y/f` and `/y/f/child` in one bundle: written side by side they raced (a 500 for `f`)."""
    api = alice.api()
    for n in range(6):
        folder = f"/nest-{first}-{n}"
        names = [f"{folder}/f", f"{folder}/f/child"]
        order = names if first == "file" else names[::-1]
        members = [(bundle.member_of(p, p.encode()), p.encode()) for p in order]
        r = api.call(
            "POST", "/v1/bundles", params={"parents": "true"}, data=bundle.pack(members), headers=OCTET
        )
        assert r.status_code == 200, r.text
        files = r.json()["files"]
        assert [f["status"] for f in files] == ["ok", "error"], files
        assert files[1]["error"]["status"] == 409, files


def test_a_member_commits_only_over_the_version_it_expects(alice):
    api, old = alice.api(), b"old"
    alice.sdk().put_bytes("/expect/a", old, parents=True)
    alice.sdk().put_bytes("/expect/b", old, parents=True)
    members = [
        (
            bundle.member_of(
                "/expect/a", b"new a", expect=hashlib.sha256(hashlib.sha256(old).digest()).hexdigest()
            ),
            b"new a",
        ),
        (bundle.member_of("/expect/b", b"new b", expect="0" * 64), b"new b"),
        (bundle.member_of("/expect/c", b"new c", expect=bundle.ABSENT), b"new c"),
        (bundle.member_of("/expect/a", b"again", expect=bundle.ABSENT), b"again"),
    ]
    r = api.call("POST", "/v1/bundles", data=bundle.pack(members[:3]), headers=OCTET)
    assert [f["status"] for f in r.json()["files"]] == ["ok", "error", "ok"], r.text
    assert r.json()["files"][1]["error"]["code"] == "version-mismatch"
    r = api.call("POST", "/v1/bundles", data=bundle.pack(members[3:]), headers=OCTET)
    assert r.json()["files"][0]["error"]["code"] == "version-mismatch"
    ns = alice.ns_dir() / "expect"
    assert [(ns / n).read_bytes() for n in "abc"] == [b"new a", old, b"new c"]


@pytest.mark.parametrize("cut", ["truncated", "garbage", "not-zstd-json"])
def test_a_malformed_bundle_is_a_400_and_stores_nothing(alice, cut):
    data = os.urandom(50_000)
    body = bundle.pack([(bundle.member_of(f"/malformed-{cut}/a.bin", data), data)])
    body = {
        "truncated": body[: len(body) // 2],
        "garbage": os.urandom(2000),
        "not-zstd-json": b'{"files":[]}',
    }[cut]
    r = alice.api().call("POST", "/v1/bundles", data=body, headers=OCTET)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "bad-bundle"
    assert not (alice.ns_dir() / f"malformed-{cut}").exists()


def test_an_oversized_bundle_is_a_413(alice):
    r = alice.api().call("POST", "/v1/bundles", data=os.urandom(bundle.MAX_BODY + 1), headers=OCTET)
    assert r.status_code == 413, r.text
    assert r.json()["error"]["code"] == "bundle-too-large"


def test_quota_refuses_single_members_and_the_rest_commit(deployment):
    carol = _make_user(deployment, "bundle-quota")
    env = {**os.environ, **deployment.env}
    subprocess.run(
        [
            HYCLOUD,
            "admin",
            "set-quota",
            carol.name,
            "--files",
            "3",
            "--table",
            deployment.outputs["TableName"],
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    members = [(bundle.member_of(f"/q/f{i}", b"x" * i), b"x" * i) for i in range(5)]
    r = carol.api().call("POST", "/v1/bundles", data=bundle.pack(members), headers=OCTET)
    assert r.status_code == 200, r.text
    statuses = [f["status"] for f in r.json()["files"]]
    assert statuses.count("ok") == 3
    assert {f["error"]["code"] for f in r.json()["files"] if f["status"] == "error"} == {"quota-exceeded"}
    assert len(list((carol.ns_dir() / "q").iterdir())) == 3


def test_download_bundle_serves_small_files_and_refers_the_rest(alice, tmp_path):
    client = alice.sdk()
    client.put_bytes("/dl/a.txt", b"alpha", parents=True, mtime=1_400_000_000, mode=0o600)
    big = tmp_path / "big"
    big.write_bytes(os.urandom(2 * 1024 * 1024 + 5))
    client.put(big, "/dl/big.bin")
    paths = ["/dl/a.txt", "/dl/big.bin", "/dl/missing", "/dl"]
    r = alice.api().call(
        "POST", "/v1/bundles/download", json={"paths": paths}, headers={"Accept": "application/octet-stream"}
    )
    assert r.status_code == 200
    answer = bundle.unpack(r.content)
    assert [(m.path, data, m.mtime, m.mode) for m, data in answer.files] == [
        ("/dl/a.txt", b"alpha", 1_400_000_000, 0o600)
    ]
    others = {o["path"]: o for o in answer.others}
    assert others["/dl/big.bin"]["status"] == "large" and others["/dl/big.bin"]["size"] == big.stat().st_size
    assert others["/dl/missing"]["error"]["status"] == 404
    assert others["/dl"]["error"]["code"] == "is-a-directory"
    bad = alice.api().call("POST", "/v1/bundles/download", json={"paths": ["../etc/passwd"]})
    assert bad.status_code == 400


def test_files_of_a_failed_bundle_are_sent_once_more(alice, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(20):
        (src / f"f{i}").write_bytes(os.urandom(100 + i))
    failed: list[str] = []

    def fail_first_bundle(x) -> None:
        if x.route.endswith("/v1/bundles") and not failed:
            failed.append(x.route)
            x.status, x.response_body = 500, b'{"error":{"code":"internal-error","message":"lost"}}'

    with FaultProxy(on_response=fail_first_bundle) as proxy:
        out = json.loads(cli(alice, proxy, "--json", "put", "-r", str(src), "/requeued").stdout)
    assert failed and len(out) == 20
    assert api_requests(proxy).count("/bundles") >= 2
    for i in range(20):
        assert (alice.ns_dir() / "requeued" / f"f{i}").read_bytes() == (src / f"f{i}").read_bytes()


def test_a_bundle_too_large_for_a_request_is_staged_through_s3(alice, tmp_path):
    """16 incompressible files of 300 KiB: their bundle (4.9 MB) is larger than a request may
    be (4 MiB), so it is staged in S3 and committed by one job a request names, not split."""
    src = tmp_path / "src"
    src.mkdir()
    files = {f"f{i:02d}.bin": os.urandom(300 * 1024) for i in range(16)}
    for name, data in files.items():
        (src / name).write_bytes(data)
    with FaultProxy() as proxy:
        out = json.loads(cli(alice, proxy, "--json", "put", "-r", str(src), "/staged").stdout)
    assert len(out) == 16
    # the encrypted-folder headers asked first (one small bundle read) are not the upload
    routes = [
        r for r in api_requests(proxy) if r.startswith(("/bundles", "/delta")) and r != "/bundles/download"
    ]
    assert routes[:2] == ["/delta/staging", "/bundles"] and set(routes[2:]) <= {"/bundles/jobs"}, routes
    [commit] = [x for x in proxy.forwarded if x.route.endswith("/v1/bundles")]
    assert commit.query.get("staged") and not commit.body
    assert {p: f["sha256"] for p, f in efs_files(alice.ns_dir()).items() if p.startswith("/staged/")} == {
        f"/staged/{name}": sha(data) for name, data in files.items()
    }
    s3, bucket = alice.deployment.client("s3"), alice.deployment.outputs["BucketName"]
    left = s3.list_objects_v2(Bucket=bucket, Prefix=f"staging/{alice.ns_key}/").get("KeyCount", 0)
    assert left == 0, "the staged bundle was left in S3"
    again = alice.api().call("POST", "/v1/bundles", params={"staged": commit.query["staged"]})
    assert again.status_code == 409 and again.json()["error"]["code"] == "not-staged"


def test_a_read_only_key_may_download_a_bundle_but_not_upload_one(alice):
    from tests.e2e.conftest import ApiSession

    alice.sdk().put_bytes("/ro/a.txt", b"readable", parents=True)
    env = {**os.environ, **alice.deployment.env}
    cmd = [HYCLOUD, "--json", "admin", "add-key", alice.name, "--read-only"]
    cmd += ["--table", alice.deployment.outputs["TableName"]]
    made = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=60)
    reader = ApiSession(alice.deployment.api_url, json.loads(made.stdout)["api_key"])
    got = reader.call(
        "POST",
        "/v1/bundles/download",
        json={"paths": ["/ro/a.txt"]},
        headers={"Accept": "application/octet-stream"},
    )
    assert got.status_code == 200 and bundle.unpack(got.content).files[0][1] == b"readable"
    members = [(bundle.member_of("/ro/b.txt", b"no"), b"no")]
    refused = reader.call("POST", "/v1/bundles", data=bundle.pack(members), headers=OCTET)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "read-only-key"
    assert not (alice.ns_dir() / "ro" / "b.txt").exists()


def test_a_large_bundle_commits_together_and_waits_for_a_busy_path(deployment):
    """250 files in three folders: their leases span several transactions; one path is leased
    by another operation for 2 s more, and its file waits for it while the others commit. After:
    no lease left, one record and one Merkle node per file, the usage counter counts them all."""
    user = _make_user(deployment, "bundle-batch")
    ddb, table = deployment.client("dynamodb"), deployment.outputs["TableName"]
    ddb.put_item(
        TableName=table,
        Item={
            "pk": {"S": f"LOCK#{user.ns_key}"},
            "sk": {"S": "/b/d1/f100"},
            "owner": {"S": "another-operation"},
            "expires": {"N": str(math.ceil(time.time()) + 2)},  # 2-3 s from now: >= 1 s when sent
        },
    )
    data = {f"/b/d{i % 3}/f{i:03d}": f"file {i}\n".encode() * (1 + i % 5) for i in range(250)}
    members = [(bundle.member_of(path, body), body) for path, body in data.items()]
    started = time.monotonic()
    r = user.api().call("POST", "/v1/bundles", data=bundle.pack(members), headers=OCTET)
    assert r.status_code == 200, r.text
    assert time.monotonic() - started >= 1, "the busy path was not waited for"
    assert [(f["path"], f["status"], f["sha256"]) for f in r.json()["files"]] == [
        (path, "ok", sha(body)) for path, body in data.items()
    ]
    assert {p: f["sha256"] for p, f in efs_files(user.ns_dir()).items()} == {
        p: sha(b) for p, b in data.items()
    }
    assert records_disagreeing(deployment, user.ns_key, user.ns_dir()) == []
    assert _leases(deployment, user) == []
    quota = user.api().call("GET", "/v1/usage", params={"source": "records"}).json()["quota"]
    assert quota["files"]["used"] == 250 and quota["bytes"]["used"] == sum(map(len, data.values()))
    assert user.sdk().merkle_root() == merkle_tree_on_efs(user.ns_dir()).hash.hex()


def _leases(deployment, user: User) -> list[dict]:
    page = deployment.client("dynamodb").query(
        TableName=deployment.outputs["TableName"],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"LOCK#{user.ns_key}"}},
        ConsistentRead=True,
    )
    return page["Items"]
