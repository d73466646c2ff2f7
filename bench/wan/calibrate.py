"""A loopback bulk server and the client side of its three exchanges, to check a link against its setting.

Line protocol: `P\\n` → one byte back (a ping); `D<n>\\n` → n bytes back (a
download); `U<n>\\n` + n bytes → the server's receive time and first segment
size (an upload). Rates are taken at the receiving end from the first to the
last byte, so the one-way delay does not dilute them.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from typing import Self

SEGMENT = 64 * 1024
PAYLOAD = b"x" * SEGMENT
MAX_SERVE_SECONDS = 600


def serve_bulk(conn: socket.socket) -> None:
    """Answer one connection's commands until it closes."""
    with conn, conn.makefile("rb") as f, contextlib.suppress(ConnectionError):
        for line in f:
            cmd, n = line[:1], int(line[1:].strip() or 0)
            if cmd == b"P":
                conn.sendall(b"p")
            elif cmd == b"D":
                _send_bytes(conn, n)
            elif cmd == b"U":
                first = f.read1(min(SEGMENT, n))
                start, got = time.perf_counter(), len(first)
                while got < n:
                    got += len(f.read1(min(SEGMENT, n - got)))
                conn.sendall(f"{time.perf_counter() - start} {len(first)}\n".encode())


def _send_bytes(sock: socket.socket, nbytes: int) -> None:
    while nbytes > 0:
        sock.sendall(PAYLOAD[: min(SEGMENT, nbytes)])
        nbytes -= SEGMENT


class BulkServer:
    """Thread-per-connection bulk server on 127.0.0.1 (port chosen by the system)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address: tuple[str, int] = self._listener.getsockname()[:2]

    def serve_forever(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=serve_bulk, args=(conn,), daemon=True).start()

    def start(self) -> Self:
        threading.Thread(target=self.serve_forever, name="bulk-server", daemon=True).start()
        return self

    def close(self) -> None:
        self._listener.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def download(address: tuple[str, int], nbytes: int) -> float:
    """Receive `nbytes` from the bulk server; return the rate in bits/s after the first segment."""
    with socket.create_connection(address) as sock:
        sock.sendall(b"D%d\n" % nbytes)
        first = sock.recv(1 << 20)
        start, got = time.perf_counter(), len(first)
        while got < nbytes:
            data = sock.recv(1 << 20)
            if not data:
                raise ConnectionError(f"stream ended after {got} of {nbytes} bytes")
            got += len(data)
        return (nbytes - len(first)) * 8 / (time.perf_counter() - start)


def upload(address: tuple[str, int], nbytes: int) -> float:
    """Send `nbytes` to the bulk server; return the rate in bits/s it saw after the first segment."""
    with socket.create_connection(address) as sock:
        sock.sendall(b"U%d\n" % nbytes)
        _send_bytes(sock, nbytes)
        elapsed, first = sock.makefile("rb").readline().split()
        return (nbytes - int(first)) * 8 / float(elapsed)


def ping_times(address: tuple[str, int], count: int) -> list[float]:
    """Round-trip times (s) of one-byte exchanges on one connection; the first includes connecting."""
    times = []
    start = time.perf_counter()
    with socket.create_connection(address) as sock:
        for _ in range(count):
            sock.sendall(b"P\n")
            if sock.recv(1) != b"p":
                raise ConnectionError("ping not answered")
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
    return times


def main() -> None:
    """Serve on loopback in a process of its own; print the port; stop when stdin closes or after 10 min."""
    with BulkServer() as server:
        print(server.address[1], flush=True)
        stopper = threading.Thread(target=sys.stdin.read, daemon=True)
        stopper.start()
        stopper.join(MAX_SERVE_SECONDS)


if __name__ == "__main__":
    main()
