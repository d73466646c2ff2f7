"""The user's secret: a key file's bytes, $HYCLOUD_PASSPHRASE, or a prompt (twice for a new one)."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from hycloud_core.errors import BadRequestError

ENV = "HYCLOUD_PASSPHRASE"
NEW_ENV = "HYCLOUD_NEW_PASSPHRASE"


def read_secret(key_file: Path | None = None, env: str = ENV, new: bool = False) -> bytes:
    if key_file is not None:
        data = key_file.read_bytes()
        if len(data) < 16:
            raise BadRequestError(f"{key_file}: a key file holds at least 16 bytes")
        return data
    if os.environ.get(env):
        return os.environ[env].encode()
    first = getpass.getpass("New passphrase: " if new else "Passphrase: ")
    if new and getpass.getpass("Again: ") != first:
        raise BadRequestError("the passphrases differ")
    if not first:
        raise BadRequestError("an empty passphrase")
    return first.encode()
