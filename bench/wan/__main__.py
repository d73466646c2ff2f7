"""CLI: run a WAN link in the foreground until --max-seconds, Ctrl-C or SIGTERM.

python -m bench.wan --target 127.0.0.1:4566 --down 50 --up 50 --rtt 100 --listen 127.0.0.1:0
"""

from __future__ import annotations

import argparse
import signal
import sys

from . import control
from .link import DEFAULT_MAX_SECONDS, WanLink


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected host:port, got {text!r}")
    return host, int(port)


def _rate(text: str) -> float | None:
    return None if text.lower() in ("0", "none", "unlimited") else float(text)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.wan", description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=_address, default="127.0.0.1:4566", help="host:port to forward to")
    parser.add_argument("--down", type=_rate, default=50.0, help="downlink Mbit/s (0 = unlimited)")
    parser.add_argument("--up", type=_rate, default=50.0, help="uplink Mbit/s (0 = unlimited)")
    parser.add_argument("--rtt", type=float, default=100.0, help="round-trip time, ms")
    parser.add_argument("--listen", type=_address, default="127.0.0.1:0", help="loopback host:port")
    parser.add_argument("--max-seconds", type=float, default=DEFAULT_MAX_SECONDS, help="stop after this long")
    parser.add_argument(
        "--no-handshake", action="store_true", help="new connections skip the 1-RTT handshake"
    )
    parser.add_argument("--control", action="store_true", help="JSON control channel on stdin/stdout")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    link = WanLink(
        args.target,
        down_mbps=args.down,
        up_mbps=args.up,
        rtt_ms=args.rtt,
        listen=args.listen,
        max_seconds=args.max_seconds,
        handshake=not args.no_handshake,
    ).start()
    signal.signal(signal.SIGTERM, lambda *_: link.close())
    if args.control:
        control.serve(link, sys.stdin.buffer, sys.stdout)
        return 0
    print(f"{link.url} -> {args.target[0]}:{args.target[1]}", flush=True)
    try:
        while not link.wait(0.5):
            pass
    except KeyboardInterrupt:
        link.close()
    print(f"bytes up {link.bytes_up} down {link.bytes_down}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
