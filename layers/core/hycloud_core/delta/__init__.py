"""rsync-style delta sync with adaptive chunk size (seed 000 §III-B).

The client builds a signature (checksum list) of its old version, the relay computes a
zstd-compressed delta of the new version against it, and the client patches and checks the
result against the hash the delta carries. Formats: FORMAT.md. Engine choice: encoder.py.

The names below load on first use (PEP 562): the engine brings numpy, zstandard and the compiled
loops (about 0.15 s), which a caller that only weighs eq. 2 (`decision`), or a job that only
applies a version-aware delta (`versioned`), should not pay at start. `signature` here is the
submodule; the function that makes a checksum list of a file is `sync.signature`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "CANDIDATE_SIZES": "adaptive",
    "AdaptiveChunkSize": "adaptive",
    "GammaMode": "adaptive",
    "PredictiveChunkSize": "adaptive",
    "TrafficSample": "adaptive",
    "elimination_ratios": "adaptive",
    "measure_candidates": "adaptive",
    "delta_seconds": "decision",
    "should_delta_download": "decision",
    "should_delta_upload": "decision",
    "DeltaStats": "encoder",
    "delta": "encoder",
    "DeltaError": "errors",
    "DeltaFormatError": "errors",
    "DeltaMismatch": "errors",
    "patch": "patcher",
    "FULL_STRONG_LEN": "rolling",
    "default_strong_len": "rolling",
    "Signature": "signature",
    "delta_bytes": "sync",
    "fetch_and_patch": "sync",
    "local_delta_source": "sync",
    "patch_bytes": "sync",
    "signature_bytes": "sync",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
