"""What an encrypted folder refuses, each with a stable code (never returned as data)."""

from __future__ import annotations

from ..errors import HyCloudError


class CryptoError(HyCloudError):
    """Base of every refusal: the client exits with "corrupt" (9) for these."""

    status, code = 422, "crypto-error"


class WrongKeyError(CryptoError):
    """The passphrase or key file opens none of the folder's key slots."""

    status, code = 403, "wrong-key"


class KeyUnavailableError(CryptoError):
    """A path is inside an encrypted folder and no passphrase or key file was given for it: the
    plain commands refuse rather than store plaintext there or return ciphertext."""

    status, code = 403, "key-unavailable"


class IntegrityError(CryptoError):
    """An object was altered, swapped, truncated or moved: its authentication failed."""

    code = "integrity-failed"


class RollbackError(CryptoError):
    """A manifest older than one this client has already seen was served (a replay)."""

    code = "rollback"


class FormatError(CryptoError):
    """Not an object of a format this client knows (or a name that cannot be encrypted)."""

    code = "bad-format"
