"""The types hold ([tool.mypy] in pyproject.toml: the core library strictly, the client checked):
run in every test run, so CI enforces them as `make lint` does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MYPY = Path(sys.executable).with_name("mypy")


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MYPY), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,  # a fresh run takes about 20 s; the cache (.mypy_cache) makes later ones faster
    )


def test_the_core_library_and_the_client_type_check():
    run = _mypy()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success" in run.stdout
    # both packages were read, not an empty selection
    checked = re.search(r"in (\d+) source files", run.stdout)
    assert checked and int(checked.group(1)) >= 150, run.stdout


def test_a_wrongly_typed_module_is_reported(tmp_path):
    """The same settings on a small module with an unannotated function and a None where a str
    is needed: both are errors, so the check above cannot pass by checking nothing."""
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        "def shout(text: str) -> str:\n"
        "    return text.upper()\n\n\n"
        "def untyped(value):\n"
        "    return value\n\n\n"
        "shout(None)\n"
    )
    run = _mypy(
        "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"), str(wrong)
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "[arg-type]" in run.stdout and "[no-untyped-def]" in run.stdout, run.stdout
