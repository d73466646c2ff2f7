"""Send a `requests.Session`'s traffic for the cloud through a WanLink, URLs and Host headers unchanged.

The redirect happens where the socket is opened: a connection to a matching
host:port is made to the link's listening address instead, while the request
line and Host header still name the original endpoint. So presigned S3 URLs,
whose SigV4 signature covers the Host, go through the link untouched, in path
style (`127.0.0.1:4566/bucket/key`) and virtual-host style
(`bucket.s3.localhost.localstack.cloud:4566/key`) alike.

    session = requests.Session()
    session.mount("http://", WanAdapter(link))   # every http URL on the link's target port

Connections that do not match go straight to their host, unthrottled.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util import connection

Match = Callable[[str, int], bool]


class Link(Protocol):
    target: tuple[str, int]
    address: tuple[str, int] | None


class _Redirect:
    """Mixin over urllib3's connection: open the socket to `wan_via` when `wan_match(host, port)`."""

    wan_via: tuple[str, int]
    wan_match: Match

    def _new_conn(self) -> socket.socket:
        if not self.wan_match(self.host, self.port):
            return super()._new_conn()
        try:
            return connection.create_connection(
                self.wan_via,
                self.timeout,
                source_address=self.source_address,
                socket_options=self.socket_options,
            )
        except TimeoutError as err:
            raise ConnectTimeoutError(self, f"Connection to WAN link {self.wan_via} timed out") from err
        except OSError as err:
            raise NewConnectionError(self, f"Failed to connect to WAN link {self.wan_via}: {err}") from err


def _pool_classes(via: tuple[str, int], match: Match) -> dict[str, type[HTTPConnectionPool]]:
    attrs = {"wan_via": via, "wan_match": staticmethod(match)}
    http_conn = type("WanHTTPConnection", (_Redirect, HTTPConnection), attrs)
    https_conn = type("WanHTTPSConnection", (_Redirect, HTTPSConnection), attrs)
    return {
        "http": type("WanHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": http_conn}),
        "https": type("WanHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": https_conn}),
    }


def same_port(link: Link) -> Match:
    """Default match: any host on the link target's port (LocalStack answers every name on one port)."""
    port = link.target[1]
    return lambda _host, p: p == port


class WanAdapter(HTTPAdapter):
    """An HTTPAdapter whose connections to matching host:port go through `link`.

    Extra keyword arguments (max_retries, pool_maxsize, ...) go to HTTPAdapter.
    """

    def __init__(self, link: Link, *, match: Match | None = None, **kwargs: Any) -> None:
        if link.address is None:
            raise RuntimeError("start the link before mounting it")
        self._wan_pools = _pool_classes(link.address, match or same_port(link))
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = self._wan_pools


def session_through(link: Link, session: requests.Session | None = None, **kwargs: Any) -> requests.Session:
    """`session` (or a new one) with http:// and https:// mounted through `link`."""
    session = session or requests.Session()
    for scheme in ("http://", "https://"):
        session.mount(scheme, WanAdapter(link, **kwargs))
    return session


def rewrite_url(url: str, link: Link) -> str:
    """`url` with its host:port replaced by the link's address.

    For clients that cannot take an adapter (curl, another HTTP library). The
    Host header then names the link, so only use it where the server does not
    check the Host (SigV4-signed requests must be signed for the link's address).
    Prefer WanAdapter for requests, or endpoint_url=link.url for boto3.
    """
    if link.address is None:
        raise RuntimeError("link not started")
    parts = urlsplit(url)
    host, port = link.address
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{host}:{port}" if userinfo else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
