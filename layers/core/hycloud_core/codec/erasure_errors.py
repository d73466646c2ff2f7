"""Errors raised while framing, parsing or decoding erasure-coded blocks."""


class ErasureError(ValueError):
    """Base class: the input blocks cannot be turned back into the chunk they claim to hold."""


class BadMagicError(ErasureError):
    """The bytes do not start with the block magic, so they are not a HyCloud block at all."""


class UnsupportedVersionError(ErasureError):
    """The block was written by a newer format version than this library reads."""


class TruncatedBlockError(ErasureError):
    """The block is shorter (or longer) than its header says; usually a cut-off download."""


class CorruptBlockError(ErasureError):
    """The block's stored hash does not match its bytes."""


class InconsistentBlocksError(ErasureError):
    """Good blocks disagree on which chunk they belong to (index, length, digest or (n, k))."""


class NotEnoughBlocksError(ErasureError):
    """Fewer than k distinct good blocks of the chunk were supplied.

    `needed` is None when no good block was seen, so k itself is unknown.
    """

    def __init__(self, message: str, *, needed: int | None, good: int, rejected: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.good = good
        self.rejected = rejected
