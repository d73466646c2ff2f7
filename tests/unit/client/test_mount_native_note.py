"""The line `hycloud mount --native` prints once mounted: how the kernel's requests come, and how
to turn FUSE over io_uring on where the kernel has it switched off."""

from __future__ import annotations

from pathlib import Path

import pytest

from hycloud.mount import native


@pytest.fixture
def switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "enable_uring"
    monkeypatch.setattr(native, "URING_SWITCH", path)
    return path


def test_over_dev_fuse_with_io_uring_off_it_says_how_to_turn_it_on(switch: Path) -> None:
    switch.write_text("N\n")
    line = native.mounted_note("/mnt/hc", "/dev/fuse")
    assert line.startswith("mounted on /mnt/hc: the kernel's requests come over /dev/fuse; ")
    assert f"as root, `echo Y > {switch}`, then mount again" in line


@pytest.mark.parametrize(
    ("content", "transport", "io_uring"),
    [
        ("Y\n", "io_uring", True),  # in use
        (None, "/dev/fuse", True),  # a kernel without it: nothing to turn on
        ("N\n", "/dev/fuse", False),  # --no-io-uring: the user chose /dev/fuse
        ("Y\n", "/dev/fuse", True),  # on, but this process may not use io_uring (a sysctl, seccomp)
    ],
)
def test_no_hint_where_there_is_nothing_to_turn_on(
    switch: Path, content: str | None, transport: str, io_uring: bool
) -> None:
    if content is not None:
        switch.write_text(content)
    line = native.mounted_note("/mnt/hc", transport, io_uring)
    assert line == f"mounted on /mnt/hc: the kernel's requests come over {transport}"
