"""WanLink against loopback servers: rate each way, RTT, byte counts, isolation and shutdown.

Rates are measured at the receiving end (bench.wan.calibrate); tolerances allow
for a busy 2-core machine.
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.wan import SpawnedWanLink, WanLink
from bench.wan.calibrate import download, ping_times, upload

pytestmark = pytest.mark.timing  # rates and delays of real sockets: run first (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[3]
RATE_TOLERANCE = 0.15
RTT_TOLERANCE = 0.030


def within(measure, expected: float, tolerance: float, attempts: int = 3) -> float:
    """Measure until a result falls within tolerance (at most `attempts` times); return the last.

    The suite runs beside the local cloud, so one measurement can land late on a busy machine;
    the link is wrong only when every attempt misses.
    """
    for _ in range(attempts):
        got = measure()
        if expected - tolerance <= got <= expected + tolerance:
            break
    return got


@pytest.mark.parametrize("kind", [WanLink, SpawnedWanLink])
def test_bulk_rate_each_direction(bulk_server, make_link, kind) -> None:
    link = make_link(bulk_server, kind=kind, down_mbps=32, up_mbps=16, rtt_ms=40)
    down = within(lambda: download(link.address, 4_000_000), 32e6, 32e6 * RATE_TOLERANCE)
    up = within(lambda: upload(link.address, 2_000_000), 16e6, 16e6 * RATE_TOLERANCE)
    assert down == pytest.approx(32e6, rel=RATE_TOLERANCE)
    assert up == pytest.approx(16e6, rel=RATE_TOLERANCE)


def test_rate_is_shared_by_connections(bulk_server, make_link) -> None:
    link = make_link(bulk_server, down_mbps=30, up_mbps=30, rtt_ms=20)
    nbytes, rates = 2_000_000, []

    def both() -> float:
        start = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            rates[:] = pool.map(lambda _: download(link.address, nbytes), range(2))
        return 2 * nbytes * 8 / (time.perf_counter() - start - 0.02)

    total = within(both, 30e6, 30e6 * RATE_TOLERANCE)
    assert total == pytest.approx(30e6, rel=RATE_TOLERANCE)
    assert all(r < 30e6 * 0.7 for r in rates)  # neither got the whole link


def test_round_trip_adds_rtt(bulk_server, make_link) -> None:
    direct = statistics.median(ping_times(bulk_server, 6)[1:])
    link = make_link(bulk_server, down_mbps=50, up_mbps=50, rtt_ms=100)
    times: list[float] = []

    def exchange() -> float:
        times[:] = ping_times(link.address, 6)
        return statistics.median(times[1:]) - direct

    assert within(exchange, 0.100, RTT_TOLERANCE) == pytest.approx(0.100, abs=RTT_TOLERANCE)
    assert times[0] - direct == pytest.approx(0.200, abs=RTT_TOLERANCE)  # handshake, then the exchange


def test_no_handshake_new_connection_costs_one_rtt(bulk_server, make_link) -> None:
    link = make_link(bulk_server, down_mbps=None, up_mbps=None, rtt_ms=100, handshake=False)
    first = within(lambda: ping_times(link.address, 1)[0], 0.100, RTT_TOLERANCE)
    assert first == pytest.approx(0.100, abs=RTT_TOLERANCE)


def test_counters_equal_bytes_each_way(bulk_server, make_link) -> None:
    link = make_link(bulk_server, down_mbps=None, up_mbps=None, rtt_ms=0)
    upload(link.address, 123_457)
    download(link.address, 765_433)
    deadline = time.monotonic() + 2
    while len([c for c in link.connections() if c.closed]) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    up_cmd, down_cmd = len(b"U123457\n"), len(b"D765433\n")
    conns = link.connections()
    assert [c.closed is not None for c in conns] == [True, True]
    assert conns[0].bytes_up == up_cmd + 123_457
    assert conns[1].bytes_up == down_cmd and conns[1].bytes_down == 765_433
    assert link.bytes_up == conns[0].bytes_up + conns[1].bytes_up
    assert link.bytes_down == conns[0].bytes_down + conns[1].bytes_down
    link.reset_counters()
    assert (link.bytes_up, link.bytes_down, link.connections()) == (0, 0, [])


def test_traffic_beside_the_link_is_not_slowed(bulk_server, make_link) -> None:
    link = make_link(bulk_server, down_mbps=8, up_mbps=8, rtt_ms=100)
    busy = threading.Thread(target=download, args=(link.address, 500_000))
    busy.start()
    direct = download(bulk_server, 8_000_000)
    busy.join()
    assert direct > 20 * 8e6
    assert link.bytes_down == 500_000  # the direct transfer never touched the link


def _refused(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=1).close()
    except OSError:
        return True
    return False


def _link_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("wan-link-")]


def test_exit_stops_thread_and_cuts_connections(bulk_server) -> None:
    with WanLink(bulk_server, down_mbps=1, up_mbps=1, rtt_ms=50) as link:
        sock = socket.create_connection(link.address)
        sock.sendall(b"D1000000\n")
        sock.recv(1)
    assert not link.running and _link_threads() == []
    assert _refused(link.address)
    sock.settimeout(2)
    received = 0
    with sock, contextlib.suppress(ConnectionResetError):
        while data := sock.recv(1 << 16):  # ends with EOF or a reset, not a timeout
            received += len(data)
    assert received < 1_000_000


def test_stops_by_itself_after_max_seconds(bulk_server) -> None:
    link = WanLink(bulk_server, rtt_ms=10, max_seconds=0.5).start()
    assert ping_times(link.address, 1)
    assert link.wait(3)
    assert _link_threads() == [] and _refused(link.address)
    link.close()  # closing a link that already stopped is harmless


@pytest.mark.parametrize("kind", [WanLink, SpawnedWanLink])
def test_listens_on_loopback_only(bulk_server, kind) -> None:
    with pytest.raises(ValueError):
        kind(bulk_server, listen=("0.0.0.0", 0))


def test_cli_serves_then_exits_after_max_seconds(bulk_server) -> None:
    target = f"{bulk_server[0]}:{bulk_server[1]}"
    args = ["--target", target, "--down", "50", "--up", "50", "--rtt", "20", "--max-seconds", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.wan", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        url = proc.stdout.readline().split()[0]
        host, port = url.removeprefix("http://").split(":")
        assert host == "127.0.0.1"
        assert len(ping_times((host, int(port)), 2)) == 2
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_spawned_link_counts_resets_and_stops(bulk_server, make_link) -> None:
    link = make_link(bulk_server, kind=SpawnedWanLink, down_mbps=None, up_mbps=None, rtt_ms=0)
    download(link.address, 300_001)
    conns = link.connections()
    assert link.bytes_down == 300_001 and [c.bytes_down for c in conns] == [300_001]
    link.reset_counters()
    assert (link.bytes_up, link.bytes_down) == (0, 0)
    upload(link.address, 5000)
    link.close()
    assert not link.running and _refused(link.address)
    assert link.bytes_up == len(b"U5000\n") + 5000  # figures survive the child


def test_spawned_link_stops_by_itself_after_max_seconds(bulk_server) -> None:
    link = SpawnedWanLink(bulk_server, rtt_ms=10, max_seconds=0.5).start()
    assert ping_times(link.address, 1)
    assert link.wait(5)
    assert _refused(link.address)
    assert link.connections()[0].bytes_up == 2  # the final figures arrived before the child exited
    link.close()


def test_the_target_is_never_held_up_by_the_link(make_link) -> None:
    """A target that sends 16 MB at once (more than the sockets between hold) finishes sending
    long before the 128 Mbit/s link has delivered it (LocalStack drops a connection whose send
    stalls), and every byte arrives."""
    size, sent_in = 16_000_000, []
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 16)
            started = time.monotonic()
            conn.sendall(os.urandom(size))
            sent_in.append(time.monotonic() - started)

    threading.Thread(target=serve, daemon=True).start()
    link = make_link(listener.getsockname()[:2], down_mbps=128, up_mbps=128, rtt_ms=20)
    with socket.create_connection(link.address, timeout=10) as client:
        got, started = 0, time.monotonic()
        while chunk := client.recv(1 << 16):
            got += len(chunk)
            if got >= size:
                break
        took = time.monotonic() - started
    listener.close()
    assert got == size and took > 0.8
    assert sent_in and sent_in[0] < took / 4
