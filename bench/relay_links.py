"""The client's link to S3 and its link to the relay (the API) emulated separately.

The seed's setting: the client is far from S3's region and near the relay. The API is addressed as
`localhost` and presigned S3 URLs name another host on the same port, so each connection is sent
through the link of what it talks to (LocalStack answers every name on one port).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.util import connection

from hycloud import http as client_http

API_HOST = "localhost"


def api_url(url: str) -> str:
    """The API URL with its host named `localhost`: its connections take the relay link."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, f"{API_HOST}:{parts.port}", parts.path, parts.query, parts.fragment))


class SplitAdapter(HTTPAdapter):
    """Connections to the API go through `relay_link`, all others on its port through `s3_link`."""

    def __init__(self, relay_link: Any, s3_link: Any, **kwargs: Any) -> None:
        port, relay_via, s3_via = relay_link.target[1], relay_link.address, s3_link.address

        class Conn(HTTPConnection):
            def _new_conn(self):  # noqa: ANN202 - urllib3's signature
                if self.port != port:
                    return super()._new_conn()
                via = relay_via if self.host == API_HOST else s3_via
                return connection.create_connection(
                    via, self.timeout, source_address=self.source_address, socket_options=self.socket_options
                )

        self._pools = {"http": type("SplitPool", (HTTPConnectionPool,), {"ConnectionCls": Conn})}
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {**self.poolmanager.pool_classes_by_scheme, **self._pools}


@contextmanager
def split_links(relay_link: Any, s3_link: Any):
    """Sessions made inside reach the relay and S3 over their own emulated links."""

    def hook(session) -> None:
        session.mount("http://", SplitAdapter(relay_link, s3_link, pool_maxsize=16))

    client_http.SESSION_HOOKS.append(hook)
    try:
        yield
    finally:
        client_http.SESSION_HOOKS.remove(hook)
