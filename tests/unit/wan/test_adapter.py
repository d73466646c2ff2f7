"""WanAdapter: requests for the target go through the link with URL and Host unchanged."""

from __future__ import annotations

import hashlib
import os
import time

import pytest
import requests

from bench.wan import SpawnedWanLink, WanAdapter, WanLink, rewrite_url, session_through

pytestmark = pytest.mark.timing  # rates and delays of real sockets: run first (tests/conftest.py)


def test_request_goes_through_link_keeping_host_and_path(http_server, make_link) -> None:
    link = make_link(http_server, down_mbps=50, up_mbps=50, rtt_ms=60)
    host, port = http_server
    url = f"http://{host}:{port}/bucket/key?X-Amz-Signature=abc&partNumber=1"
    with session_through(link) as session:
        start = time.perf_counter()
        response = session.get(url)
        elapsed = time.perf_counter() - start
    seen_host, seen_path, _ = response.text.split()
    assert (seen_host, seen_path) == (f"{host}:{port}", "/bucket/key?X-Amz-Signature=abc&partNumber=1")
    assert elapsed >= 2 * 0.060  # handshake and the exchange, both over the link
    head = len("HTTP/1.1 200 OK\r\n") + len(f"Content-Length: {len(response.content)}\r\n")
    assert len(response.content) + head < link.bytes_down < len(response.content) + 512
    assert [c.bytes_down for c in link.connections()] == [link.bytes_down]  # one connection carried it


def test_virtual_host_names_need_no_dns(http_server, make_link) -> None:
    """Virtual-hosted S3 names are never resolved: the socket goes to the link, the Host stays."""
    link = make_link(http_server, down_mbps=None, up_mbps=None, rtt_ms=0)
    name = f"bucket.s3.localhost.localstack.cloud:{http_server[1]}"
    with session_through(link) as session:
        response = session.get(f"http://{name}/key")
    assert response.text.split()[:2] == [name, "/key"]
    assert link.bytes_down > 0


@pytest.mark.parametrize("kind", [WanLink, SpawnedWanLink])
def test_upload_body_arrives_intact_and_is_counted(http_server, make_link, kind) -> None:
    link = make_link(http_server, kind=kind, down_mbps=100, up_mbps=100, rtt_ms=10)
    body = os.urandom(1_000_003)
    with session_through(link, max_retries=0) as session:
        response = session.put(f"http://{http_server[0]}:{http_server[1]}/part", data=body)
    assert response.text.split()[2] == hashlib.sha256(body).hexdigest()
    assert len(body) < link.bytes_up < len(body) + 1024  # body plus one request head


def test_other_ports_go_direct(http_server, make_link) -> None:
    other = make_link(http_server, down_mbps=None, up_mbps=None, rtt_ms=0)  # a stand-in target
    link = make_link(("127.0.0.1", other.address[1]), down_mbps=1, up_mbps=1, rtt_ms=200)
    session = requests.Session()
    session.mount("http://", WanAdapter(link))
    start = time.perf_counter()
    response = session.get(f"http://{http_server[0]}:{http_server[1]}/direct")
    assert time.perf_counter() - start < 0.2
    assert response.ok and (link.bytes_up, link.bytes_down) == (0, 0)
    session.close()


def test_adapter_needs_a_started_link(http_server) -> None:
    with pytest.raises(RuntimeError):
        WanAdapter(WanLink(http_server))


def test_rewrite_url_swaps_only_the_address(http_server, make_link) -> None:
    link = make_link(http_server)
    port = link.address[1]
    assert rewrite_url("http://localhost:4566/b/k?X-Amz-Signature=s#f", link) == (
        f"http://127.0.0.1:{port}/b/k?X-Amz-Signature=s#f"
    )
    assert rewrite_url("http://u:p@h:1/x", link) == f"http://u:p@127.0.0.1:{port}/x"
