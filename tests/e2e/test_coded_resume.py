"""A coded upload cut short and run again sends only the blocks the cloud does not hold, and says so."""

from __future__ import annotations

import hashlib
import os

import pytest

from hycloud.transfer import Progress
from tests.progress_notes import Notes

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024


class Cut(Exception):
    pass


class CutAfterFirstBlock(Progress):
    def advance(self, nbytes: int) -> None:
        super().advance(nbytes)
        raise Cut("connection lost")


def test_a_rerun_of_a_cut_coded_upload_resumes_and_says_so(alice, tmp_path):
    sdk = alice.sdk()
    if sdk.info().get("coded_threshold") is None:
        pytest.skip("erasure coding needs three instances (hycloud:regions)")
    local = tmp_path / "cut.bin"
    local.write_bytes(os.urandom(sdk.small_file_threshold + 16 * MiB))
    with pytest.raises(Cut):
        sdk.put(local, "/resume/cut.bin", parents=True, coded=True, progress=CutAfterFirstBlock())
    assert not sdk.exists("/resume/cut.bin")

    again = Notes()
    entry = sdk.put(local, "/resume/cut.bin", parents=True, coded=True, progress=again)
    try:
        resumed = [n for n in again.notes if n.startswith("resuming:")]
        assert resumed, again.notes
        assert 0 < entry["sent_bytes"] < again.total, (entry["sent_bytes"], again.total)
        assert again.done == again.total  # the bar ends full: held blocks count as done
        got = tmp_path / "back.bin"
        sdk.get("/resume/cut.bin", got)
        assert hashlib.sha256(got.read_bytes()).hexdigest() == hashlib.sha256(local.read_bytes()).hexdigest()
    finally:  # later repair and migration jobs walk every coded file
        sdk.rm("/resume/cut.bin")
