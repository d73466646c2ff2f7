"""The short ways to a delta: computed when a version is committed, or run direct by the controller.

A commit of a large file starts the version-aware delta from the version it superseded, so a
client one version behind is answered from that job's result. A job whose base is in the relay
cache runs in the request: the controller invokes the delta function (no workflow), and its
outcome (success or a short error) is reported like a workflow's.
"""

from __future__ import annotations

import base64
import io
import json
import random
import subprocess
import time

import pytest

from hycloud_core import content, jobs, paths
from hycloud_core.delta import patch_bytes, signature_bytes, versioned
from hycloud_core.delta.apply import apply_delta
from tests.e2e.conftest import HYCLOUD, _make_user
from tests.e2e.executions import finished
from tests.e2e.fault_proxy import FaultProxy

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024
PATH = "/fast.bin"


def _edit(data: bytes, rnd: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(6):
        at = rnd.randrange(len(out) - 1000)
        out[at : at + 1000] = rnd.randbytes(1000)
    return bytes(out)


def _patched(base: bytes, answer: dict) -> bytes:
    out = io.BytesIO()
    apply_delta(io.BytesIO(base), io.BytesIO(base64.b64decode(answer["result"]["delta"])), out)
    return out.getvalue()


def _job(user, new: bytes, base: bytes) -> str:
    key = jobs.job_key("dl", user.id, PATH, content.hash_bytes(new), "version", content.hash_bytes(base))
    return jobs.execution_name(key, 1)


@pytest.fixture(scope="module")
def history(deployment, tmp_path_factory):
    """Three versions of a 5 MiB file, put one after the other."""
    user, tmp, rnd = _make_user(deployment, "fastdelta"), tmp_path_factory.mktemp("fast"), random.Random(5)
    versions = [rnd.randbytes(5 * MiB)]
    versions += [_edit(versions[0], rnd)]
    versions += [_edit(versions[1], rnd)]
    sdk = user.sdk()
    for i, data in enumerate(versions[:2]):
        (tmp / f"v{i}").write_bytes(data)
        sdk.put(tmp / f"v{i}", PATH, via="direct")
    return user, tmp, versions


def _wait_succeeded(sfn, arn: str) -> dict:
    return finished(sfn, arn, timeout_s=60, poll_s=0.2)


def test_a_commit_computes_the_delta_from_the_version_it_superseded(deployment, history):
    user, _, (v0, v1, _) = history
    sfn, machine = deployment.client("stepfunctions"), deployment.outputs["DeltaStateMachineArn"]
    job = _job(user, v1, v0)
    arn = machine.replace(":stateMachine:", ":execution:") + f":{job}"
    desc = _wait_succeeded(sfn, arn)  # started by the commit, before anyone asked
    assert desc["status"] == "SUCCEEDED", desc
    asked = time.time()
    r = user.api().call(
        "POST", "/v1/delta/download", json={"path": PATH, "base_hash": content.hash_bytes(v0)}
    )
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["state"] == "ready" and answer["job"] == job
    assert desc["startDate"].timestamp() < asked
    assert _patched(v0, answer) == v1


def test_a_job_with_its_base_cached_runs_direct(deployment, history):
    user, tmp, (v0, v1, v2) = history
    (tmp / "v2").write_bytes(v2)
    user.sdk().put(tmp / "v2", PATH, via="direct")
    # v0 -> v2: nothing computed it; v0 is cached as the base of the commit-time job above
    r = user.api().call(
        "POST",
        "/v1/delta/download",
        params={"wait": 5},  # a caller that waits has a short job run in its request
        json={"path": PATH, "base_hash": content.hash_bytes(v0)},
    )
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["state"] == "ready" and answer["job"] == _job(user, v2, v0)
    assert _patched(v0, answer) == v2
    sfn = deployment.client("stepfunctions")
    arn = deployment.outputs["DeltaStateMachineArn"].replace(":stateMachine:", ":execution:")
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.describe_execution(executionArn=f"{arn}:{answer['job']}")
    assert (deployment.efs_root() / "staging" / f"{answer['job']}.outcome").exists()


def test_a_direct_job_that_fails_reports_a_short_error_and_changes_nothing(deployment, history):
    user, _, (_, v1, v2) = history
    current = content.hash_bytes(v2)  # the path's version, cached by the delta job that read it
    delta = io.BytesIO()
    versioned.encode(io.BytesIO(v2), len(v2), io.BytesIO(v1), len(v1), delta)
    r = user.api().call(
        "PUT",
        "/v1/delta/upload",
        params={"path": PATH, "base_hash": current, "content_hash": "0" * 64, "wait": 5},
        data=delta.getvalue(),
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["state"] == "failed" and answer["error"]["code"] == "hash-mismatch", answer
    assert "Traceback" not in r.text
    sfn = deployment.client("stepfunctions")
    arn = deployment.outputs["DeltaStateMachineArn"].replace(":stateMachine:", ":execution:")
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):  # it ran direct
        sfn.describe_execution(executionArn=f"{arn}:{answer['job']}")
    stat = user.api().call("GET", "/v1/stat", params={"path": PATH})
    assert stat.json()["content_hash"] == current


def test_a_direct_job_reads_a_version_not_in_the_relay_cache_by_url(deployment, tmp_path):
    """A version never cached (one version only: no commit-time job read it) is fetched by the
    direct job through the presigned URL the controller gives it, then kept in the relay cache."""
    user, rnd = _make_user(deployment, "fasturl"), random.Random(9)
    old = rnd.randbytes(3 * MiB)
    new = _edit(old, rnd)
    (tmp_path / "new").write_bytes(new)
    user.sdk().put(tmp_path / "new", "/url.bin", via="direct")
    r = user.api().call(
        "PUT",
        "/v1/delta/download",
        params={"path": "/url.bin", "wait": 5},
        data=signature_bytes(old, 2048),
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["state"] == "ready" and answer["result"]["new_from"] == "url", answer
    assert patch_bytes(old, base64.b64decode(answer["result"]["delta"])) == new
    assert answer["result"]["delta_size"] < len(new) // 10
    cached = deployment.efs_root() / "cache" / paths.cache_name(user.id, "/url.bin")
    assert cached.read_bytes() == new


def _cli(user, proxy: FaultProxy, state, *args: str) -> subprocess.CompletedProcess:
    env = user.cli_env(**proxy.env(), HYCLOUD_STATE=str(state))
    result = subprocess.run([HYCLOUD, *args], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_a_get_against_a_version_the_client_knows_asks_for_the_delta_first(deployment, tmp_path):
    """No stat before the delta request: its answer names the path's current version."""
    user, rnd = _make_user(deployment, "fastknown"), random.Random(11)
    v1 = rnd.randbytes(4 * MiB)
    v2 = _edit(v1, rnd)
    state, local, sdk = tmp_path / "state.sqlite3", tmp_path / "f.bin", user.sdk()
    (tmp_path / "v1").write_bytes(v1)
    (tmp_path / "v2").write_bytes(v2)
    sdk.put(tmp_path / "v1", "/known.bin", via="direct")
    with FaultProxy() as proxy:
        first = json.loads(_cli(user, proxy, state, "--json", "get", "/known.bin", str(local)).stdout)
    assert first["mode"] == "direct" and local.read_bytes() == v1
    sdk.put(tmp_path / "v2", "/known.bin", via="direct")
    with FaultProxy() as proxy:
        second = json.loads(
            _cli(user, proxy, state, "--json", "get", "--via", "delta", "/known.bin", str(local)).stdout
        )
    assert second["mode"] == "delta" and local.read_bytes() == v2
    routes = [(x.method, x.route.split("/v1/")[-1]) for x in proxy.forwarded]
    assert routes[0] == ("POST", "delta/download"), routes
    assert not {"files", "stat"} & {route for _, route in routes}, routes
    assert sum(len(x.body) + len(x.response_body) for x in proxy.forwarded) < 0.05 * len(v2)
    with FaultProxy() as proxy:  # current already: one request, nothing rewritten
        third = json.loads(
            _cli(user, proxy, state, "--json", "get", "--via", "delta", "/known.bin", str(local)).stdout
        )
    assert third["mode"] == "same" and len(proxy.forwarded) == 1 and local.read_bytes() == v2


def _delta_get(user, tmp_path, path: str, v1: bytes, v2: bytes) -> tuple[dict, list]:
    """`v1` put and got through the CLI (so its client knows it), then `v2` put and got with
    `--via delta`: the CLI's --json report and the requests it sent for that second get."""
    state, local, sdk = tmp_path / "state.sqlite3", tmp_path / "f.bin", user.sdk()
    (tmp_path / "v1").write_bytes(v1)
    (tmp_path / "v2").write_bytes(v2)
    sdk.put(tmp_path / "v1", path, via="direct")
    with FaultProxy() as proxy:
        _cli(user, proxy, state, "--json", "get", path, str(local))
    sdk.put(tmp_path / "v2", path, via="direct")
    with FaultProxy() as proxy:
        got = json.loads(_cli(user, proxy, state, "--json", "get", "--via", "delta", path, str(local)).stdout)
    assert got["mode"] == "delta" and local.read_bytes() == v2
    return got, proxy.forwarded


def test_a_delta_over_the_json_inline_limit_comes_in_the_answer_itself_as_bytes(deployment, tmp_path):
    """A client that accepts bytes gets a ready delta of up to 4 MiB as the answer's body (the
    job's state in a header): one request, no base64, where a delta over 256 KiB took a second
    request for its data."""
    user, rnd = _make_user(deployment, "fastbinary"), random.Random(13)
    v1 = rnd.randbytes(4 * MiB)
    v2 = bytearray(v1)
    for at in range(0, len(v2), 64 * 1024):  # 64 scattered edits of 8 KiB: a delta of about 512 KiB
        v2[at : at + 8192] = rnd.randbytes(8192)
    v2 = bytes(v2)
    got, forwarded = _delta_get(user, tmp_path, "/binary.bin", v1, v2)
    assert got["received_bytes"] > 256 * 1024
    routes = [(x.method, x.route.split("/v1/")[-1]) for x in forwarded]
    assert routes == [("POST", "delta/download")], routes
    assert len(forwarded[0].response_body) == got["received_bytes"]  # the delta itself, not base64 of it
    # a client that asks for JSON still gets JSON (and the data route for what is not inline)
    r = user.api().call(
        "POST", "/v1/delta/download", json={"path": "/binary.bin", "base_hash": content.hash_bytes(v1)}
    )
    assert r.status_code == 200 and r.json()["state"] == "ready" and "delta" not in r.json()["result"]


@pytest.mark.parametrize("changed_mib, as_body", [(3.9, True), (4.2, False)], ids=["under-4MiB", "over-4MiB"])
def test_the_largest_delta_in_an_answer_fits_the_gateway_and_a_larger_one_comes_from_s3(
    deployment, tmp_path, changed_mib, as_body
):
    """At the edge: a 3.9 MiB delta is the answer's body (5.2 MB once base64 inside the gateway,
    under Lambda's 6 MB); a 4.2 MiB one goes to S3 and the answer names its URL."""
    user, rnd = _make_user(deployment, "fastedge"), random.Random(17)
    v1 = rnd.randbytes(6 * MiB)
    changed = int(changed_mib * MiB)
    v2 = v1[:MiB] + rnd.randbytes(changed) + v1[MiB + changed :]
    got, forwarded = _delta_get(user, tmp_path, "/edge.bin", v1, v2)
    routes = [(x.method, x.route.split("/v1/")[-1]) for x in forwarded]
    body = forwarded[0].response_body
    if as_body:
        assert routes == [("POST", "delta/download")], routes
        assert len(body) == got["received_bytes"] > changed
    else:  # the answer names the delta in S3; the client fetches it there
        assert routes[0] == ("POST", "delta/download") and len(routes) == 2, routes
        assert routes[1][0] == "GET" and routes[1][1].endswith(".delta"), routes
        assert len(body) < 10_000 and got["received_bytes"] > 4 * MiB


def test_an_rsync_style_get_of_a_known_version_is_one_request_answered_with_the_delta(
    deployment, tmp_path, monkeypatch
):
    """The checksum list goes at once, at the block the file's chunk-size state (kept from the
    last transfer) chooses; the answer names the version and is the delta itself: no stat first,
    no second request for a delta over the JSON inline limit."""
    user, rnd = _make_user(deployment, "fastsig"), random.Random(19)
    v1 = rnd.randbytes(4 * MiB)
    v2 = bytearray(v1)
    for at in range(0, len(v2), 64 * 1024):  # scattered edits: an rsync delta over 256 KiB
        v2[at : at + 8192] = rnd.randbytes(8192)
    v2 = bytes(v2)
    (tmp_path / "v1").write_bytes(v1)
    (tmp_path / "v2").write_bytes(v2)
    local = tmp_path / "f.bin"
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "writer.sqlite3"))
    user.sdk().put(tmp_path / "v1", "/sig.bin", via="direct")
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "reader.sqlite3"))
    reader = user.sdk()
    reader.get("/sig.bin", local)
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "writer.sqlite3"))
    user.sdk().put(tmp_path / "v2", "/sig.bin", via="direct")
    with FaultProxy() as proxy:
        for name, value in proxy.env().items():
            monkeypatch.setenv(name, value)
        reader.get("/sig.bin", local, via="delta", delta_mode="rsync")
    assert local.read_bytes() == v2
    got = reader.last_transfer
    assert got["mode"] == "delta" and got["kind"] == "rsync" and got["received_bytes"] > 256 * 1024
    download = [x for x in proxy.forwarded if not x.route.endswith("/files/chunking")]  # (learned after)
    routes = [(x.method, x.route.split("/v1/")[-1]) for x in download]
    assert routes == [("PUT", "delta/download")], routes
    assert len(download[0].response_body) == got["received_bytes"]  # the delta, not base64 of it
    assert reader.store.get("/sig.bin").content_hash == content.hash_bytes(v2)


def test_a_known_version_the_cloud_no_longer_holds_is_followed_by_the_checksum_list_at_once(
    deployment, tmp_path, monkeypatch
):
    """The version-aware request's 409 (base-unknown) is followed straight by the checksum list:
    two requests, where it was a stat and the version-aware request again before it."""
    user, rnd = _make_user(deployment, "fastgone"), random.Random(23)
    held = rnd.randbytes(3 * MiB)  # a version this client holds that the cloud does not (purged)
    new = _edit(held, rnd)
    (tmp_path / "new").write_bytes(new)
    local = tmp_path / "f.bin"
    local.write_bytes(held)
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state.sqlite3"))
    sdk = user.sdk()
    sdk.put(tmp_path / "new", "/gone.bin", via="direct")
    sdk.store.remember("/gone.bin", content.hash_bytes(held), local, None)
    with FaultProxy() as proxy:
        for name, value in proxy.env().items():
            monkeypatch.setenv(name, value)
        sdk.get("/gone.bin", local, via="delta")
    assert local.read_bytes() == new and sdk.last_transfer["kind"] == "rsync"
    download = [x for x in proxy.forwarded if not x.route.endswith("/files/chunking")]  # (learned after)
    routes = [(x.method, x.route.split("/v1/")[-1], x.status) for x in download]
    assert routes == [("POST", "delta/download", 409), ("PUT", "delta/download", 200)], routes
    assert sdk.store.get("/gone.bin").content_hash == content.hash_bytes(new)
