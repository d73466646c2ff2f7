"""`hycloud admin` run in the test process against the deployment's table.

The admin commands are the real CLI (`hycloud.cli.main.main`: parsing, exit codes, the one-line
errors on stderr, --json output) talking to the deployed DynamoDB table; only the interpreter
start is left out, 2-4 s a command on a loaded 2-core machine. Every other module's users are
still made by the `hycloud` executable (tests/e2e/conftest.py), which keeps the entry point
itself covered.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import threading
import uuid
from unittest import mock

_ONE_AT_A_TIME = threading.Lock()  # sys.stdout, sys.stderr and os.environ are process-wide


def run_admin(env: dict[str, str], table: str, *args: str) -> subprocess.CompletedProcess:
    """`hycloud --json admin ARGS --table TABLE` with the cloud's credentials in `env`; the
    result as `subprocess.run` would give it (return code, stdout, stderr)."""
    from hycloud.cli.main import main

    argv = ["--json", "admin", *args, "--table", table]
    out, err, code = io.StringIO(), io.StringIO(), 0
    with _ONE_AT_A_TIME, mock.patch.dict(os.environ, env):
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    return subprocess.CompletedProcess(["hycloud", *argv], code, out.getvalue(), err.getvalue())


def make_user(deployment, prefix: str):
    """A new user of the deployment, made by `hycloud admin create-user` in this process."""
    from tests.e2e.conftest import User

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    result = run_admin(deployment.env, deployment.outputs["TableName"], "create-user", name)
    assert result.returncode == 0, result.stdout + result.stderr
    created = json.loads(result.stdout)
    return User(name, created["api_key"], deployment, created.get("id", name))
