"""The emulated client link the benchmarks share (bench/wan.py): its command-line shape, the link
itself, routing the client's sessions through it, and timing a step with the bytes it moved.

    parser = argparse.ArgumentParser(); add_link_args(parser); args = parser.parse_args()
    with client_link(port, args) as link, through(link):
        row = measure(link, lambda: client.put(...))
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.wan import SpawnedWanLink, WanAdapter
from hycloud import http as client_http

POOL = 16  # connections per session through the link: the client's own pool size


def add_link_args(
    parser: argparse.ArgumentParser, down: float = 50, up: float = 50, rtt: float = 100
) -> None:
    """--down/--up (Mbit/s) and --rtt (ms): the issue's link, 50 Mbit/s and 100 ms, by default."""
    parser.add_argument("--down", type=float, default=down, help="Mbit/s towards the client")
    parser.add_argument("--up", type=float, default=up, help="Mbit/s from the client")
    parser.add_argument("--rtt", type=float, default=rtt, help="round-trip time, ms")


def describe(args: argparse.Namespace) -> str:
    return f"{args.down:g}/{args.up:g} Mbit/s down/up, RTT {args.rtt:g} ms"


def client_link(port: int, args: argparse.Namespace) -> SpawnedWanLink:
    """A link to the local cloud's port shaped as `args` says (a context manager)."""
    return SpawnedWanLink(target=("127.0.0.1", port), down_mbps=args.down, up_mbps=args.up, rtt_ms=args.rtt)


@contextmanager
def through(link: Any) -> Iterator[None]:
    """Client sessions made inside go through the link (API calls and presigned S3 alike)."""

    def hook(session) -> None:
        for scheme in ("http://", "https://"):
            session.mount(scheme, WanAdapter(link, pool_maxsize=POOL))

    client_http.SESSION_HOOKS.append(hook)
    try:
        yield
    finally:
        client_http.SESSION_HOOKS.remove(hook)


def measure(link: Any, fn: Callable[[], Any]) -> dict:
    """Seconds `fn` took and the bytes it moved over the link (up, down, both); its result."""
    link.reset_counters()
    t0 = time.perf_counter()
    result = fn()
    return {
        "seconds": time.perf_counter() - t0,
        "bytes": link.bytes_up + link.bytes_down,
        "up": link.bytes_up,
        "down": link.bytes_down,
        "result": result,
    }
