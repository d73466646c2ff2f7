"""The user's secret: a key file's bytes, $HYCLOUD_PASSPHRASE, or a prompt (twice for a new one).

`$HYCLOUD_KEY_FILE` names a key file for commands that take no `--key-file` (the plain `put`,
`get`, `ls` and `sync` into an encrypted folder). Without a terminal to prompt on, a missing
secret is a `KeyUnavailableError` (exit 4), never a hang on stdin.
"""

from __future__ import annotations

import getpass
import os
import sys
from pathlib import Path

from hycloud_core.crypto.errors import KeyUnavailableError
from hycloud_core.errors import BadRequestError

ENV = "HYCLOUD_PASSPHRASE"
NEW_ENV = "HYCLOUD_NEW_PASSPHRASE"
KEY_FILE_ENV = "HYCLOUD_KEY_FILE"


def read_secret(key_file: Path | None = None, env: str = ENV, new: bool = False, what: str = "") -> bytes:
    """The secret; `what` names the folder for the refusal when none can be had."""
    if key_file is None and env == ENV and os.environ.get(KEY_FILE_ENV):
        key_file = Path(os.environ[KEY_FILE_ENV])
    if key_file is not None:
        data = key_file.read_bytes()
        if len(data) < 16:
            raise BadRequestError(f"{key_file}: a key file holds at least 16 bytes")
        return data
    if os.environ.get(env):
        return os.environ[env].encode()
    if not sys.stdin.isatty():
        raise KeyUnavailableError(
            f"{what or 'this folder'} is encrypted and its key is not available: set ${env}"
            + (f" or ${KEY_FILE_ENV}" if env == ENV else "")
            + ", or run on a terminal to be asked"
        )
    first = getpass.getpass("New passphrase: " if new else "Passphrase: ")
    if new and getpass.getpass("Again: ") != first:
        raise BadRequestError("the passphrases differ")
    if not first:
        raise BadRequestError("an empty passphrase")
    return first.encode()
