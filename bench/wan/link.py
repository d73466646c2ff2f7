"""WanLink: the proxy on a background thread with its own event loop, for use from blocking code.

    with WanLink(target=("127.0.0.1", 4566), down_mbps=50, up_mbps=50, rtt_ms=100) as link:
        requests.get(f"{link.url}/restapis/...")      # or mount WanAdapter(link) on a session
        print(link.bytes_up, link.bytes_down)

The link stops on exit from the `with` block, on `close()`, or by itself after
`max_seconds`, whichever comes first, so a crashed benchmark leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import ipaddress
import threading
from typing import Self

from .proxy import LinkProxy, LinkShape
from .stats import ConnectionStats, LinkStats

DEFAULT_TARGET = ("127.0.0.1", 4566)
DEFAULT_MAX_SECONDS = 3600.0
START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


def _bps(mbps: float | None) -> float | None:
    return None if mbps is None else mbps * 1_000_000


def require_loopback(listen: tuple[str, int]) -> None:
    """Both link kinds refuse to listen anywhere but on loopback."""
    if not ipaddress.ip_address(listen[0]).is_loopback:
        raise ValueError("the link listens on loopback only")


class BaseLink:
    """What both link kinds share, so that either serves a benchmark: one constructor (bandwidth in
    Mbit/s, 10^6 bit/s, None = unlimited; RTT in ms), the `with` block and the URL. A kind builds
    its own state from the settings in `_prepare`, and runs in `start` and `close`."""

    def __init__(
        self,
        target: tuple[str, int] = DEFAULT_TARGET,
        *,
        down_mbps: float | None = 50,
        up_mbps: float | None = 50,
        rtt_ms: float = 100,
        listen: tuple[str, int] = ("127.0.0.1", 0),
        max_seconds: float = DEFAULT_MAX_SECONDS,
        handshake: bool = True,
    ) -> None:
        require_loopback(listen)
        self.target = (target[0], int(target[1]))
        self.down_mbps, self.up_mbps, self.rtt_ms = down_mbps, up_mbps, rtt_ms
        self.listen = listen
        self.max_seconds = max_seconds
        self.handshake = handshake
        self.address: tuple[str, int] | None = None
        self._prepare()

    def _prepare(self) -> None:
        """The kind's own state, from the settings (nothing runs yet)."""

    def start(self) -> Self:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        if self.address is None:
            raise RuntimeError("link not started")
        return f"http://{self.address[0]}:{self.address[1]}"


class WanLink(BaseLink):
    """A client access link of set bandwidth and RTT, on a thread of this process."""

    def _prepare(self) -> None:
        self.shape = LinkShape(_bps(self.down_mbps), _bps(self.up_mbps), self.rtt_ms / 1000, self.handshake)
        self.stats = LinkStats()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    # lifecycle

    def start(self) -> Self:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._run, name=f"wan-link-{id(self):x}", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):
            raise TimeoutError("WAN link did not start")
        if self._error is not None:
            raise self._error
        return self

    def close(self) -> None:
        """Stop listening, cut open connections and wait for the thread to end."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:
                pass  # the loop ended between the check and the call (max_seconds ran out)
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the link has stopped (or `timeout`); True if it has."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # what benchmarks read

    @property
    def bytes_up(self) -> int:
        """Bytes delivered client → target since start or the last reset."""
        return self.stats.bytes_up

    @property
    def bytes_down(self) -> int:
        """Bytes delivered target → client since start or the last reset."""
        return self.stats.bytes_down

    def reset_counters(self) -> None:
        self.stats.reset()

    def connections(self) -> list[ConnectionStats]:
        return self.stats.connections()

    # the loop thread

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as err:  # noqa: BLE001 - handed to the starting thread
            self._error = err
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        proxy = LinkProxy(self.target, self.shape, self.stats)
        self.address = await proxy.start(*self.listen)
        self._ready.set()
        try:
            await asyncio.wait_for(self._stop.wait(), self.max_seconds)
        except TimeoutError:
            pass
        finally:
            await proxy.close()
