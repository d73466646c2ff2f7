"""The import contracts of .importlinter (docs/ARCHITECTURE.md) hold: run in every test run, so CI
enforces the layers as `make lint` does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_import_contracts_are_kept():
    run = _lint(ROOT / ".importlinter")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_a_contract_against_the_real_graph_is_reported_broken(tmp_path):
    """The same tool on an inverted layering (records above the filesystem) fails, naming an
    import it found: the contracts above are checked against the real import graph."""
    inverted = tmp_path / "inverted.ini"
    inverted.write_text(
        "[importlinter]\nroot_packages =\n    hycloud_core\n"
        "[importlinter:contract:inverted]\nname = inverted\ntype = layers\n"
        "layers =\n    hycloud_core.store\n    hycloud_core.fs\n"
    )
    run = _lint(inverted)
    assert run.returncode == 1
    assert "hycloud_core.fs." in run.stdout and "-> hycloud_core.store." in run.stdout
