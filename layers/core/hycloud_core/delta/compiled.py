"""The delta encoder's compiled loops (native.c, built by cffi at install), or None.

Without a compiler at install time, or on a platform the Lambda layer was not built for, the
engine runs the same computations in numpy: same results, slower at small block sizes.
"""

from __future__ import annotations

try:
    from ._native import ffi, lib
except ImportError:  # not built: numpy does the work
    ffi = lib = None

__all__ = ["ffi", "lib"]
