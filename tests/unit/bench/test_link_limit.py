"""bench/link_limit.py: a transfer's least time over the client link, and the ratio to it."""

from __future__ import annotations

import pytest

from bench.link_limit import (
    Link,
    limit_seconds,
    mean_ratio,
    measured_ratio,
    parse_link,
    parse_links,
    ratio,
    within,
)

FIFTY = Link(down_mbps=50, up_mbps=50, rtt_ms=100)


def test_limit_is_one_round_trip_plus_each_directions_bytes_at_its_rate():
    # 1 RTT (0.1 s) + 6.25 MB down at 50 Mbit/s (1 s) + 1.25 MB up at 10 Mbit/s (1 s)
    link = Link(down_mbps=50, up_mbps=10, rtt_ms=100)
    assert limit_seconds(link, bytes_up=1_250_000, bytes_down=6_250_000) == pytest.approx(2.1)


def test_a_transfer_of_no_bytes_is_still_a_round_trip():
    assert limit_seconds(Link(10, 10, 200), 0, 0) == pytest.approx(0.2)
    assert limit_seconds(Link(10, 10, 200), 0, 0, round_trips=3) == pytest.approx(0.6)


def test_directions_use_their_own_rate():
    link = Link(down_mbps=100, up_mbps=1, rtt_ms=0)
    assert limit_seconds(link, bytes_up=125_000, bytes_down=0) == pytest.approx(1.0)
    assert limit_seconds(link, bytes_up=0, bytes_down=125_000) == pytest.approx(0.01)


def test_ratio_of_a_measurement_to_its_limit():
    # a 52 KB delta download with a little request overhead: limit 0.1 + 0.00832 + 0.0002 s
    got = measured_ratio(FIFTY, {"seconds": 0.30, "up": 1_250, "down": 52_000})
    assert got["limit_s"] == pytest.approx(0.10852)
    assert got["ratio"] == pytest.approx(0.30 / 0.10852)
    assert ratio(0.4, 0.2) == pytest.approx(2.0)


def test_a_limit_of_zero_is_refused():
    with pytest.raises(ValueError, match="positive"):
        ratio(1.0, 0.0)


def test_mean_ratio_weighs_each_transfer_alike_and_within_two_is_the_target():
    assert mean_ratio([1.0, 3.0, 2.0]) == pytest.approx(2.0)
    assert within(2.0) and within(1.3)
    assert not within(2.01)


@pytest.mark.parametrize(
    ("text", "link"),
    [
        ("50:100", Link(50, 50, 100)),
        ("10:200", Link(10, 10, 200)),
        ("50/20:100", Link(50, 20, 100)),
        (" 2.5:0 ", Link(2.5, 2.5, 0)),
    ],
)
def test_parse_link(text, link):
    assert parse_link(text) == link
    assert parse_link(link.key) == link


def test_parse_links_keeps_the_order():
    assert [link.key for link in parse_links("50:100,10:200")] == ["50:100", "10:200"]
    assert FIFTY.describe() == "50/50 Mbit/s down/up, RTT 100 ms"


@pytest.mark.parametrize("text", ["50", "fast:100", "50:100:3", "0:100", "50:-1", "50/0:100"])
def test_parse_link_refuses_a_malformed_or_impossible_link(text):
    with pytest.raises(ValueError, match="link"):
        parse_link(text)
