"""The fuse module's io_uring switch is held once per test run and put back as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infra.local import uring_switch


@pytest.fixture
def switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "enable_uring"
    path.write_text("N\n")
    monkeypatch.setattr(uring_switch, "SWITCH", path)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.delenv(uring_switch.HELD, raising=False)
    return path


def test_on_for_the_run_then_back_to_what_it_was(switch: Path) -> None:
    with uring_switch.switched_on():
        assert switch.read_text() == "Y"
        assert os.environ[uring_switch.HELD] == "1"  # the run's processes leave it alone
    assert switch.read_text() == "N"
    assert uring_switch.HELD not in os.environ


def test_a_process_inside_a_run_that_holds_it_changes_nothing(
    switch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(uring_switch.HELD, "1")
    switch.write_text("Y")
    with uring_switch.switched_on():
        switch.write_text("Y")
    assert switch.read_text() == "Y"  # not put back to anything it saw: the holder does that


def test_not_root_changes_nothing(switch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with uring_switch.switched_on():
        assert switch.read_text() == "N\n"
    assert uring_switch.HELD not in os.environ
