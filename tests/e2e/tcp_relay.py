"""A TCP relay on 127.0.0.1 in front of the local cloud's gateway that a test can stop and start
again on the same port: stopped, connections are refused and those open are cut, as when a
controller's region is unreachable, without touching the local cloud itself."""

from __future__ import annotations

import random
import socket
import threading
from urllib.parse import urlsplit, urlunsplit

FIXED_PORTS = range(20000, 30000)  # below Linux's ephemeral range (32768-60999): no connection's
# local port takes ours while the relay is stopped, so it can start again on the same port


def _listener_at(port: int) -> socket.socket:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError:
        listener.close()
        raise
    return listener


def _listener_outside_ephemeral_range() -> socket.socket:
    for port in random.sample(FIXED_PORTS, 50):
        try:
            return _listener_at(port)
        except OSError:
            continue
    raise OSError("no free port for the relay")


class TcpRelay:
    def __init__(self, target_url: str) -> None:
        parts = urlsplit(target_url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._parts = parts
        self.port = 0
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()

    def url(self) -> str:
        """The target URL with this relay's address in place of the gateway's."""
        return urlunsplit(self._parts._replace(netloc=f"127.0.0.1:{self.port}"))

    def start(self) -> TcpRelay:
        listener = _listener_at(self.port) if self.port else _listener_outside_ephemeral_range()
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Refuse new connections and cut the open ones."""
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, set()
        if listener:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() that would keep the port bound
            except OSError:
                pass
            listener.close()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()

    def __enter__(self) -> TcpRelay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._conns |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._conns -= {src, dst}
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
