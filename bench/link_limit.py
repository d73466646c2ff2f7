"""The link's limit of a transfer, and how far a measured transfer is from it.

A transfer over the client link cannot take less than the round trips it cannot avoid (each an
RTT) plus the time its bytes need on the link in each direction (bytes up / up rate + bytes down /
down rate). The ratio measured time / limit says how much of the time the link itself explains:
1 is the link's best, 2 means as much time again went elsewhere (cloud work, client CPU, extra
round trips). Issue 33 asks for delta transfers within 2× of it on average.

Links are written `DOWN[/UP]:RTT` (Mbit/s, ms), several comma-separated: `50:100,10:200`.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

# The one round trip of a request and its response: the least any transfer needs, whatever it
# sends. A new connection's handshake, a second request or a job's polling are counted against
# the transfer, not allowed for by its limit.
UNAVOIDABLE_ROUND_TRIPS = 1
WITHIN = 2.0  # the target: measured time at most this many times the limit, on average


@dataclass(frozen=True)
class Link:
    """An emulated client link: rates in Mbit/s (10^6 bit/s) each way, round-trip time in ms."""

    down_mbps: float
    up_mbps: float
    rtt_ms: float

    @property
    def key(self) -> str:
        """The link as written on the command line (`50:100`, `50/20:100`)."""
        rates = (
            f"{self.down_mbps:g}"
            if self.down_mbps == self.up_mbps
            else f"{self.down_mbps:g}/{self.up_mbps:g}"
        )
        return f"{rates}:{self.rtt_ms:g}"

    def describe(self) -> str:
        return f"{self.down_mbps:g}/{self.up_mbps:g} Mbit/s down/up, RTT {self.rtt_ms:g} ms"


def parse_link(text: str) -> Link:
    """`50:100` (50 Mbit/s both ways, 100 ms) or `50/20:100` (50 down, 20 up)."""
    try:
        rates, rtt = text.strip().split(":")
        down, _, up = rates.partition("/")
        link = Link(float(down), float(up or down), float(rtt))
    except ValueError:
        raise ValueError(f"link {text!r}: expected DOWN[/UP]:RTT, e.g. 50:100 or 50/20:100") from None
    if min(link.down_mbps, link.up_mbps) <= 0 or link.rtt_ms < 0:
        raise ValueError(f"link {text!r}: rates must be positive and the RTT not negative")
    return link


def parse_links(text: str) -> list[Link]:
    """Comma-separated links, in the order given."""
    return [parse_link(part) for part in text.split(",") if part.strip()]


def limit_seconds(
    link: Link, bytes_up: int, bytes_down: int, round_trips: int = UNAVOIDABLE_ROUND_TRIPS
) -> float:
    """The least time these bytes can take over `link`: the round trips, then each direction's
    bytes at its rate (the two directions added, as a request's body precedes its response)."""
    return (
        round_trips * link.rtt_ms / 1e3
        + 8 * bytes_up / (link.up_mbps * 1e6)
        + 8 * bytes_down / (link.down_mbps * 1e6)
    )


def ratio(seconds: float, limit: float) -> float:
    """Measured time over the link's limit (1 = as fast as the link allows)."""
    if limit <= 0:
        raise ValueError(f"limit {limit} s: a link limit is positive (give it a round trip)")
    return seconds / limit


def measured_ratio(link: Link, measured: dict) -> dict[str, float]:
    """`limit_s` and `ratio` of one measurement (its `seconds`, `up` and `down` bytes)."""
    limit = limit_seconds(link, measured["up"], measured["down"])
    return {"limit_s": limit, "ratio": ratio(measured["seconds"], limit)}


def mean_ratio(ratios: Iterable[float]) -> float:
    """The average of per-transfer ratios: each transfer weighs the same, small or large."""
    return statistics.mean(ratios)


def within(avg_ratio: float) -> bool:
    return avg_ratio <= WITHIN
