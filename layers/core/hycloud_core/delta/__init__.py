"""rsync-style delta sync with adaptive chunk size (seed 000 §III-B).

The client builds a signature (checksum list) of its old version, the relay computes a
zstd-compressed delta of the new version against it, and the client patches and checks the
result against the hash the delta carries. Formats: FORMAT.md. Engine choice: encoder.py.
"""

from .adaptive import (
    CANDIDATE_SIZES,
    AdaptiveChunkSize,
    GammaMode,
    PredictiveChunkSize,
    TrafficSample,
    elimination_ratios,
    measure_candidates,
)
from .decision import delta_seconds, should_delta_download, should_delta_upload
from .encoder import DeltaStats, delta
from .errors import DeltaError, DeltaFormatError, DeltaMismatch
from .patcher import patch
from .rolling import FULL_STRONG_LEN, default_strong_len
from .signature import Signature
from .sync import delta_bytes, fetch_and_patch, local_delta_source, patch_bytes, signature, signature_bytes

__all__ = [
    "CANDIDATE_SIZES",
    "FULL_STRONG_LEN",
    "AdaptiveChunkSize",
    "DeltaError",
    "DeltaFormatError",
    "DeltaMismatch",
    "DeltaStats",
    "GammaMode",
    "PredictiveChunkSize",
    "Signature",
    "TrafficSample",
    "default_strong_len",
    "delta",
    "delta_bytes",
    "elimination_ratios",
    "fetch_and_patch",
    "local_delta_source",
    "measure_candidates",
    "patch",
    "patch_bytes",
    "should_delta_upload",
    "should_delta_download",
    "delta_seconds",
    "signature",
    "signature_bytes",
]
