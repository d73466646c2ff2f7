"""Line-delimited JSON control channel between SpawnedWanLink and its child process.

The child writes {"address": [host, port]} once listening, then answers each
request line {"op": "totals" | "connections" | "reset" | "close"} with one
reply line. When the link stops (close, max_seconds, or the parent's end of
the pipe closing) the child writes a last reply marked "final", with totals
and connections, and exits.
"""

from __future__ import annotations

import contextlib
import json
import selectors
from dataclasses import asdict
from typing import IO, Any

from .link import WanLink

POLL_SECONDS = 0.2


def stats_reply(link: WanLink, with_connections: bool) -> dict[str, Any]:
    reply: dict[str, Any] = {"bytes_up": link.bytes_up, "bytes_down": link.bytes_down}
    if with_connections:
        reply["connections"] = [asdict(c) for c in link.connections()]
    return reply


def write(out: IO[str], message: dict[str, Any]) -> None:
    with contextlib.suppress(BrokenPipeError):  # the parent has gone; nobody left to tell
        out.write(json.dumps(message) + "\n")
        out.flush()


def serve(link: WanLink, inp: IO[bytes], out: IO[str]) -> None:
    """Answer requests until the link stops or the parent goes away; the reader is strictly lock-step."""
    write(out, {"address": list(link.address)})
    with selectors.DefaultSelector() as selector:
        selector.register(inp, selectors.EVENT_READ)
        while link.running:
            if not selector.select(POLL_SECONDS):
                continue
            line = inp.readline()
            op = json.loads(line)["op"] if line else "close"
            if op == "close":
                break
            if op == "reset":
                link.reset_counters()
            write(out, stats_reply(link, with_connections=op == "connections"))
    link.close()
    write(out, {"final": True, **stats_reply(link, with_connections=True)})
