"""The folder header `.hcenc`: key slots, chunking parameters and an epoch, HMAC-authenticated.

Plain JSON on purpose (it holds no secret: only salts and sealed keys), so an operator can see
which folders are encrypted and with what parameters. Its MAC under the folder key stops a
changed parameter or an added slot from going unnoticed by anyone who opens the folder.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass, field, replace
from typing import Any

from . import keys
from .chunking import AVG, MAX, MIN
from .errors import FormatError, IntegrityError, WrongKeyError

FORMAT = "hycloud-enc-1"
NAME = ".hcenc"


@dataclass(frozen=True)
class Header:
    folder_id: bytes
    epoch: int = 1
    chunking: dict[str, int] = field(default_factory=lambda: {"min": MIN, "avg": AVG, "max": MAX})
    slots: dict[str, dict[str, Any]] = field(default_factory=dict)
    mac: str = ""

    def body(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "folder_id": self.folder_id.hex(),
            "epoch": self.epoch,
            "chunking": self.chunking,
            "slots": self.slots,
        }

    def to_bytes(self) -> bytes:
        return json.dumps({**self.body(), "mac": self.mac}, indent=1, sort_keys=True).encode()


def _context(folder_id: bytes, label: str) -> bytes:
    return b"hycloud-enc-1/slot/" + folder_id + b"/" + label.encode()


def _mac(fk: keys.FolderKeys, header: Header) -> str:
    canonical = json.dumps(header.body(), sort_keys=True, separators=(",", ":")).encode()
    return hmac.new(fk.macs, canonical, hashlib.sha256).hexdigest()


def _slot(
    folder_key: bytes, folder_id: bytes, label: str, secret: bytes, params: keys.KdfParams
) -> dict[str, Any]:
    salt = os.urandom(keys.SALT_BYTES)
    key = keys.user_key(secret, salt, params)
    return {
        "kdf": params.to_json(),
        "salt": keys.b64(salt),
        **keys.wrap(folder_key, key, _context(folder_id, label)),
    }


def create(label: str, secret: bytes, params: keys.KdfParams | None = None) -> tuple[Header, bytes]:
    """A new folder: its header (one slot, `label`'s) and its folder key."""
    folder_id, folder_key = os.urandom(16), keys.new_folder_key()
    slot = _slot(folder_key, folder_id, label, secret, params or keys.KdfParams())
    return seal(Header(folder_id, slots={label: slot}), folder_key), folder_key


def seal(header: Header, folder_key: bytes) -> Header:
    return replace(header, mac=_mac(keys.FolderKeys.derive(header.folder_id, folder_key), header))


def parse(data: bytes) -> Header:
    try:
        raw = json.loads(data)
        if raw.get("format") != FORMAT:
            raise FormatError(f"not an encrypted folder header ({raw.get('format')!r})")
        return Header(
            bytes.fromhex(raw["folder_id"]),
            int(raw["epoch"]),
            dict(raw["chunking"]),
            dict(raw["slots"]),
            str(raw["mac"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise FormatError(f"unreadable folder header: {err}") from err


def open_key(header: Header, label: str, secret: bytes) -> bytes:
    """The folder key from `label`'s slot (then any other slot the secret opens), the MAC checked."""
    order = [label] + [other for other in header.slots if other != label]
    for name in (n for n in order if n in header.slots):
        slot = header.slots[name]
        key = keys.user_key(secret, keys.unb64(slot["salt"]), keys.KdfParams.from_json(slot["kdf"]))
        try:
            folder_key = keys.unwrap(slot, key, _context(header.folder_id, name))
        except WrongKeyError:
            continue
        if not hmac.compare_digest(
            _mac(keys.FolderKeys.derive(header.folder_id, folder_key), header), header.mac
        ):
            raise IntegrityError("the folder header was altered (its MAC does not match)")
        return folder_key
    raise WrongKeyError("the passphrase or key file opens no key slot of this folder")


def rewrap(
    header: Header, folder_key: bytes, label: str, secret: bytes, params: keys.KdfParams | None = None
) -> Header:
    """`label`'s slot sealed afresh under a new secret (new salt); the folder key and content stay."""
    slot = _slot(folder_key, header.folder_id, label, secret, params or keys.KdfParams())
    return seal(replace(header, epoch=header.epoch + 1, slots={**header.slots, label: slot}), folder_key)


def add_slot(
    header: Header, folder_key: bytes, label: str, secret: bytes, params: keys.KdfParams | None = None
) -> Header:
    """A new slot for `label` (another user): the same folder key wrapped under their secret; the
    epoch rises, so a client that saw the new header refuses the old one."""
    if label in header.slots:
        raise FormatError(f"{label} has a key slot of this folder already (key rotate changes it)")
    slot = _slot(folder_key, header.folder_id, label, secret, params or keys.KdfParams())
    return seal(replace(header, epoch=header.epoch + 1, slots={**header.slots, label: slot}), folder_key)


def drop_slot(header: Header, folder_key: bytes, label: str) -> Header:
    if label not in header.slots or len(header.slots) == 1:
        raise FormatError(f"cannot remove slot {label!r}: a folder keeps at least one")
    slots = {k: v for k, v in header.slots.items() if k != label}
    return seal(replace(header, epoch=header.epoch + 1, slots=slots), folder_key)
