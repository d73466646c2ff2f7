"""What the encrypted-folder CLI tests share: cheap keys, a state store of the test's own, and
the CLI run in-process with its exit code and output."""

from __future__ import annotations

from pathlib import Path

import pytest

from hycloud.cli.main import main
from hycloud_core.crypto import keys


def cheap_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, passphrase: str) -> None:
    """A cheap scrypt (the real cost is tested in test_crypto_keys), this test's state, its passphrase."""
    monkeypatch.setattr(keys.KdfParams.__init__, "__defaults__", (2**10, 8, 1))
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state" / "state.sqlite3"))
    monkeypatch.setenv("HYCLOUD_PASSPHRASE", passphrase)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`hycloud ARGS` in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as ended:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    return int(ended.value.code or 0), out.out, out.err
