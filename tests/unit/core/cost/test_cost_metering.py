"""EFS metering rule and the price file."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.cost import load_prices, metering
from hycloud_core.cost.prices import DEFAULT_PATH, REQUIRED, from_document

KiB = 1024


@pytest.mark.parametrize(
    ("size", "metered"),
    [
        (0, 6 * KiB),
        (1, 6 * KiB),
        (100, 6 * KiB),
        (4096, 6 * KiB),
        (4097, 10 * KiB),
        (1_000_000, 2 * KiB + 980 * KiB),
    ],
)
def test_efs_file_is_inode_plus_size_rounded_up_to_4k(size, metered):
    assert metering.efs_file_bytes(size) == metered


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=1 << 40))
def test_efs_data_is_the_smallest_4k_multiple_holding_the_file(size):
    data = metering.efs_data_bytes(size)
    assert data % 4096 == 0 and size <= data < size + 4096


def test_directory_is_inode_plus_one_block():
    assert metering.efs_dir_bytes() == 6 * KiB


def test_shipped_prices_have_every_item_with_source_and_date():
    doc = json.loads(DEFAULT_PATH.read_text())
    for name in REQUIRED:
        item = doc["items"][name]
        assert item["source"].startswith("https://") and item["as_of"] and item["unit"]
    prices = load_prices()
    assert prices.region == "us-east-1" and prices.gb(1 << 30) == 1.0
    assert prices["efs_storage_gb_month"] > 10 * prices["s3_storage_gb_month"]


def test_price_file_override_and_missing_item(tmp_path, monkeypatch):
    doc = json.loads(DEFAULT_PATH.read_text())
    doc["items"]["s3_storage_gb_month"]["value"] = 0.5
    own = tmp_path / "prices.json"
    own.write_text(json.dumps(doc))
    monkeypatch.setenv("HYCLOUD_PRICES", str(own))
    assert load_prices()["s3_storage_gb_month"] == 0.5
    del doc["items"]["efs_elastic_read_gb"]
    with pytest.raises(ValueError, match="efs_elastic_read_gb"):
        from_document(doc)
