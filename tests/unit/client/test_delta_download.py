"""The client's rsync-style delta download is the core's flow: a patch that does not verify is
retried once with full-length strong sums, and a second failure is a `HyCloudError` with a code."""

from __future__ import annotations

import io
import os
import random
from types import SimpleNamespace

import pytest

from hycloud.cli import exit_codes
from hycloud.transfer.delta import delta_download
from hycloud_core import content
from hycloud_core.delta import FULL_STRONG_LEN, Signature, delta
from hycloud_core.delta.sync import signature
from hycloud_core.errors import HyCloudError


class DeltaApi:
    """Answers checksum lists with deltas of `new`; the first `wrong` answers are computed against
    a different old version (as a server with a collision or a bug would), so they do not verify."""

    def __init__(self, new: bytes, other_old: bytes, wrong: int) -> None:
        self.new, self.other_old, self.wrong = new, other_old, wrong
        self.signatures: list[Signature] = []
        self.deltas: dict[str, bytes] = {}

    def json(self, method: str, route: str, **kw) -> dict:
        if (method, route) == ("PUT", "/v1/delta/download"):
            sig = Signature.decode(kw["data"])
            self.signatures.append(sig)
            against = kw["data"]
            if len(self.signatures) <= self.wrong:
                against = signature(io.BytesIO(self.other_old), sig.block_size, sig.strong_len)
            out = io.BytesIO()
            delta(against, io.BytesIO(self.new), out)
            job = f"job-{len(self.signatures)}"
            self.deltas[job] = out.getvalue()
            return {"job": job, "state": "running"}
        if (method, route) == ("GET", "/v1/delta/jobs"):
            job = kw["params"]["id"]
            return {"state": "ready", "result": {"kind": "rsync", "delta_size": len(self.deltas[job])}}
        raise AssertionError((method, route))

    def request(self, method: str, route: str, params: dict, **kw) -> SimpleNamespace:
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
