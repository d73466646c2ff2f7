"""A coded file is made whole in one request up to the deployment's limit, and refused with 413 above it."""

from __future__ import annotations

import pytest

from hycloud_core.coded import whole
from hycloud_core.config import InstanceConfig
from hycloud_core.errors import PayloadTooLargeError

MiB = 2**20


def _erasure(total: int, chunk: int = 2 * MiB) -> dict:
    lengths = [chunk] * (total // chunk) + ([total % chunk] if total % chunk else [])
    return {
        "n": 3,
        "k": 2,
        "chunk_size": chunk,
        "chunks": [{"length": n, "key": f"c{i}", "blocks": []} for i, n in enumerate(lengths)],
    }


def test_the_limit_is_the_deployments_and_defaults_to_512_mib(monkeypatch):
    assert InstanceConfig().coded_inline_bytes == whole.MAX_INLINE_BYTES == 512 * MiB
    monkeypatch.setenv("HYCLOUD_CODED_INLINE_BYTES", str(128 * MiB))
    limit = InstanceConfig().coded_inline_bytes
    assert limit == 128 * MiB
    assert whole.fits_inline(_erasure(128 * MiB), limit)
    assert not whole.fits_inline(_erasure(128 * MiB + 1), limit)
    assert whole.fits_inline(_erasure(128 * MiB + 1))  # the default's 512 MiB


def test_a_file_over_the_limit_is_refused_before_a_block_is_read():
    with pytest.raises(PayloadTooLargeError, match="over 128 MiB") as refused:
        whole.to_cache(_erasure(129 * MiB), "0" * 64, None, "us-east-1", None, "name", 128 * MiB)  # type: ignore[arg-type]
    assert refused.value.code == "coded-too-large"
