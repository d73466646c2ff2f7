"""The client's rsync-style delta download is the core's flow: a patch that does not verify is
retried once with full-length strong sums, and a second failure is a `HyCloudError` with a code."""

from __future__ import annotations

import io
import json
import os
import random
from types import SimpleNamespace

import pytest

from hycloud.cli import exit_codes
from hycloud.transfer.delta import delta_download, delta_from_known
from hycloud_core import content
from hycloud_core.delta import FULL_STRONG_LEN, Signature, delta, versioned
from hycloud_core.delta.sync import signature
from hycloud_core.errors import HyCloudError


class DeltaApi:
    """Answers checksum lists with deltas of `new`; the first `wrong` answers are computed against
    a different old version (as a server with a collision or a bug would), so they do not verify."""

    def __init__(self, new: bytes, other_old: bytes, wrong: int) -> None:
        self.new, self.other_old, self.wrong = new, other_old, wrong
        self.signatures: list[Signature] = []
        self.deltas: dict[str, bytes] = {}

    def _started(self, data: bytes) -> dict:
        sig = Signature.decode(data)
        self.signatures.append(sig)
        against = data
        if len(self.signatures) <= self.wrong:
            against = signature(io.BytesIO(self.other_old), sig.block_size, sig.strong_len)
        out = io.BytesIO()
        delta(against, io.BytesIO(self.new), out)
        job = f"job-{len(self.signatures)}"
        self.deltas[job] = out.getvalue()
        return {"job": job, "state": "running", "file": {"content_hash": content.hash_bytes(self.new)}}

    def json(self, method: str, route: str, **kw) -> dict:
        if (method, route) == ("GET", "/v1/delta/jobs"):
            job = kw["params"]["id"]
            return {"state": "ready", "result": {"kind": "rsync", "delta_size": len(self.deltas[job])}}
        raise AssertionError((method, route))

    def request(self, method: str, route: str, params: dict, **kw) -> SimpleNamespace:
        if (method, route) == ("PUT", "/v1/delta/download"):
            answer = self._started(kw["data"])
            return SimpleNamespace(headers={"Content-Type": "application/json"}, json=lambda: answer)
        assert (method, route) == ("GET", "/v1/delta/data")
        start = params["offset"]
        return SimpleNamespace(content=self.deltas[params["id"]][start : start + params["length"]])


def versions(tmp_path):
    rnd = random.Random(5)
    old = rnd.randbytes(300_000)
    new = old[:100_000] + rnd.randbytes(3000) + old[100_000:]
    other = new[: len(old)]  # same size as old; its blocks past the edit sit elsewhere in old
    (tmp_path / "old").write_bytes(old)
    info = {"path": "/f", "content_hash": content.hash_bytes(new), "size": len(new)}
    return old, new, other, info


def test_a_patch_that_does_not_verify_is_retried_with_full_strong_sums(tmp_path):
    old, new, other, info = versions(tmp_path)
    api = DeltaApi(new, other, wrong=1)
    traffic = delta_download(api, info, tmp_path / "old", tmp_path / "new", adapt=False, mode="rsync")
    assert (tmp_path / "new").read_bytes() == new and traffic["kind"] == "rsync"
    assert [s.strong_len for s in api.signatures][1] == FULL_STRONG_LEN
    assert api.signatures[0].strong_len < FULL_STRONG_LEN
    assert traffic["received_bytes"] == sum(len(d) for d in api.deltas.values())


def test_a_second_mismatch_is_a_one_line_error_with_an_exit_code(tmp_path):
    old, new, other, info = versions(tmp_path)
    with pytest.raises(HyCloudError) as err:
        delta_download(
            DeltaApi(new, other, wrong=2), info, tmp_path / "old", tmp_path / "new", adapt=False, mode="rsync"
        )
    assert err.value.code == "delta-mismatch" and "\n" not in err.value.message
    assert exit_codes.for_error(err.value.code, err.value.status) == exit_codes.CORRUPT
    assert sorted(os.listdir(tmp_path)) == ["old"]


class BytesAnswer:
    """The version-aware route answering a ready delta as the body, its state in a header."""

    def __init__(self, delta: bytes, header: str | None) -> None:
        self.delta, self.header = delta, header
        self.asked: list[dict] = []

    def request(self, method: str, route: str, **kw) -> SimpleNamespace:
        assert (method, route) == ("POST", "/v1/delta/download")
        self.asked.append(kw["headers"])
        headers = {"Content-Type": "application/octet-stream"}
        if self.header is not None:
            headers["x-hycloud-answer"] = self.header
        return SimpleNamespace(
            headers=headers, iter_content=lambda _size: iter([self.delta]), close=lambda: None
        )


def _version_delta(base: bytes, new: bytes) -> bytes:
    out = io.BytesIO()
    versioned.encode(io.BytesIO(base), len(base), io.BytesIO(new), len(new), out)
    return out.getvalue()


def _ready(info: dict, body: bytes, delta_size: int | None = None) -> BytesAnswer:
    """The route answering a ready job's delta `body` (claimed `delta_size` long) as bytes."""
    answer = {
        "job": "dl-x-1",
        "state": "ready",
        "file": {"content_hash": info["content_hash"], "size": info["size"]},
        "result": {"kind": "version", "delta_size": len(body) if delta_size is None else delta_size},
    }
    return BytesAnswer(body, json.dumps(answer))


def test_a_delta_answered_as_bytes_is_applied_without_another_request(tmp_path):
    old, new, _, info = versions(tmp_path)
    api = _ready(info, _version_delta(old, new))
    file, ran = delta_from_known(api, "/f", content.hash_bytes(old), level=3)
    assert "application/octet-stream" in api.asked[0]["Accept"]
    traffic = delta_download(
        api, {**info, **file}, tmp_path / "old", tmp_path / "new", base_hash=content.hash_bytes(old), ran=ran
    )
    assert (tmp_path / "new").read_bytes() == new and traffic["received_bytes"] == len(api.delta)


@pytest.mark.parametrize("header", [None, "not json", '{"job": "x"}'])
def test_bytes_without_a_readable_state_are_a_clear_error(header):
    with pytest.raises(HyCloudError) as err:
        delta_from_known(BytesAnswer(b"delta", header), "/f", "h" * 64, level=3)
    assert err.value.code == "corrupt-download"


def test_a_truncated_delta_body_is_refused(tmp_path):
    old, _, _, info = versions(tmp_path)
    file, ran = delta_from_known(_ready(info, b"x" * 999, 1000), "/f", content.hash_bytes(old), level=3)
    with pytest.raises(HyCloudError) as err:
        delta_download(
            None, {**info, **file}, tmp_path / "old", tmp_path / "new", base_hash="b" * 64, ran=ran
        )
    assert err.value.code == "corrupt-download" and not (tmp_path / "new").exists()


def test_a_version_delta_against_another_base_is_caught_by_the_content_hash(tmp_path):
    """The client skips the delta's own sha256: its content hash check must still refuse it."""
    _, new, other, info = versions(tmp_path)
    file, ran = delta_from_known(_ready(info, _version_delta(other, new)), "/f", "b" * 64, level=3)
    (tmp_path / "new").write_bytes(b"kept")
    with pytest.raises(HyCloudError) as err:
        delta_download(
            None, {**info, **file}, tmp_path / "old", tmp_path / "new", base_hash="b" * 64, ran=ran
        )
    assert err.value.code == "corrupt-download" and (tmp_path / "new").read_bytes() == b"kept"


class SignatureBytesAnswer(DeltaApi):
    """The rsync-style route answering its delta as the body, the answer (naming the version the
    delta leads to) in a header: the whole download is one request."""

    def __init__(self, new: bytes, named: str | None = None) -> None:
        super().__init__(new, b"", wrong=0)
        self.named, self.routes = named, []

    def request(self, method: str, route: str, params: dict, **kw) -> SimpleNamespace:
        self.routes.append((method, route))
        assert (method, route) == ("PUT", "/v1/delta/download") and "octet" in kw["headers"]["Accept"]
        answer = self._started(kw["data"])
        if self.named:
            answer["file"]["content_hash"] = self.named
        body = self.deltas[answer["job"]]
        answer.update(state="ready", result={"kind": "rsync", "delta_size": len(body)})
        headers = {"Content-Type": "application/octet-stream", "x-hycloud-answer": json.dumps(answer)}
        return SimpleNamespace(headers=headers, content=body)


def test_an_rsync_delta_without_a_stat_first_takes_the_version_its_answer_names(tmp_path):
    old, new, _, info = versions(tmp_path)
    api = SignatureBytesAnswer(new)
    guess = {"path": "/f", "size": len(old), "chunk_state": None}  # no content hash: nothing asked yet
    traffic = delta_download(api, guess, tmp_path / "old", tmp_path / "old", adapt=False, mode="rsync")
    assert (tmp_path / "old").read_bytes() == new and api.routes == [("PUT", "/v1/delta/download")]
    assert traffic["file"]["content_hash"] == info["content_hash"]
    assert traffic["received_bytes"] == len(api.deltas["job-1"])


def test_an_rsync_answer_naming_another_version_than_its_delta_makes_is_refused(tmp_path):
    old, new, _, _ = versions(tmp_path)
    guess = {"path": "/f", "size": len(old), "chunk_state": None}
    with pytest.raises(HyCloudError) as err:
        delta_download(
            SignatureBytesAnswer(new, named="c" * 64), guess, tmp_path / "old", tmp_path / "old", mode="rsync"
        )
    assert err.value.code == "corrupt-download" and (tmp_path / "old").read_bytes() == old


class Refusing:
    def __init__(self, error: HyCloudError) -> None:
        self.error = error

    def request(self, method: str, route: str, **kw) -> SimpleNamespace:
        raise self.error


def test_a_version_the_cloud_no_longer_holds_is_told_apart_from_a_file_it_cannot_delta():
    from hycloud_core.errors import ConflictError, NotFoundError

    with pytest.raises(ConflictError):  # the caller sends its checksum list at once
        delta_from_known(Refusing(ConflictError("gone", code="base-unknown")), "/f", "h" * 64, level=3)
    for other in (ConflictError("small", code="not-a-large-file"), NotFoundError("no such file")):
        assert delta_from_known(Refusing(other), "/f", "h" * 64, level=3) is None  # the usual way


class Arriving:
    """A ready delta answered as the body, arriving in `pieces`; notes how much of the new file
    was already written each time a piece was handed over."""

    def __init__(self, delta: bytes, info: dict, pieces: int, out_path, size: int | None = None) -> None:
        step = -(-len(delta) // pieces)
        self.pieces = [delta[i : i + step] for i in range(0, len(delta), step)]
        self.out_path, self.written_when_handed = out_path, []
        answer = {
            "job": "dl-x-1",
            "state": "ready",
            "file": {"content_hash": info["content_hash"], "size": info["size"]},
            "result": {"kind": "version", "delta_size": len(delta) if size is None else size},
        }
        self.headers = {"Content-Type": "application/octet-stream", "x-hycloud-answer": json.dumps(answer)}
        self.closed = False

    def request(self, method: str, route: str, **kw) -> Arriving:
        assert kw["stream"] is True
        return self

    def iter_content(self, _size: int):
        for piece in self.pieces:
            self.written_when_handed.append(os.path.getsize(self.out_path) if self.out_path.exists() else 0)
            yield piece

    def close(self) -> None:
        self.closed = True


def _windowed_delta(old: bytes, new: bytes, window: int) -> bytes:
    out = io.BytesIO()
    versioned.encode(io.BytesIO(old), len(old), io.BytesIO(new), len(new), out, window=window, margin=window)
    return out.getvalue()


def test_a_delta_answered_as_bytes_is_decoded_as_it_arrives(tmp_path):
    rnd = random.Random(7)
    old = rnd.randbytes(2 * 1024 * 1024)
    new = bytearray(old)
    for at in range(0, len(new), 128 * 1024):
        new[at : at + 4000] = rnd.randbytes(4000)
    new = bytes(new)
    (tmp_path / "old").write_bytes(old)
    info = {"path": "/f", "content_hash": content.hash_bytes(new), "size": len(new)}
    api = Arriving(_windowed_delta(old, new, 256 * 1024), info, 8, tmp_path / "new.hycloud-part")
    file, ran = delta_from_known(api, "/f", content.hash_bytes(old), level=3)
    traffic = delta_download(
        api, {**info, **file}, tmp_path / "old", tmp_path / "new", base_hash=content.hash_bytes(old), ran=ran
    )
    assert (tmp_path / "new").read_bytes() == new and api.closed
    assert traffic["received_bytes"] == sum(map(len, api.pieces))
    assert api.written_when_handed[-1] > 0  # windows were written before the last piece came


@pytest.mark.parametrize("cut", ["shorter", "longer"])
def test_an_arriving_delta_of_another_length_than_named_replaces_nothing(tmp_path, cut):
    old, new, _, info = versions(tmp_path)
    delta = _version_delta(old, new)
    named = len(delta) + 10 if cut == "shorter" else len(delta) - 1
    body = delta[:-10] if cut == "shorter" else delta
    api = Arriving(body, info, 3, tmp_path / "x", size=named)
    (tmp_path / "new").write_bytes(b"kept")
    file, ran = delta_from_known(api, "/f", content.hash_bytes(old), level=3)
    with pytest.raises(HyCloudError) as err:
        delta_download(
            api,
            {**info, **file},
            tmp_path / "old",
            tmp_path / "new",
            base_hash=content.hash_bytes(old),
            ran=ran,
        )
    assert err.value.code == "corrupt-download" and (tmp_path / "new").read_bytes() == b"kept"
    assert api.closed
