"""The gateway's WSGI app and its cheroot server (127.0.0.1 unless told otherwise)."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterable

from cheroot import wsgi
from wsgidav.dir_browser import WsgiDavDirBrowser
from wsgidav.error_printer import ErrorPrinter
from wsgidav.http_authenticator import HTTPAuthenticator
from wsgidav.mw.base_mw import BaseMiddleware
from wsgidav.request_resolver import RequestResolver
from wsgidav.wsgidav_app import WsgiDAVApp

from .auth import ApiKeyDomainController
from .properties import TreePropertyManager
from .provider import HyCloudProvider
from .workspaces import Workspaces

FINITE_DEPTH = (
    b'<?xml version="1.0" encoding="utf-8"?>\n<D:error xmlns:D="DAV:"><D:propfind-finite-depth/></D:error>\n'
)


class FiniteDepth(BaseMiddleware):
    """PROPFIND of a whole tree (`Depth: infinity`, which a missing Depth means) is refused as RFC
    4918 9.1 allows, with 403 and DAV:propfind-finite-depth: one request must not walk a tree of
    any size. Clients list folder by folder (Depth: 1), as Windows, macOS, davfs2 and rclone do.
    It sits after authentication, so a caller without a valid key still gets 401."""

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        depth = environ.get("HTTP_DEPTH", "infinity").strip().lower()
        if environ.get("REQUEST_METHOD") != "PROPFIND" or depth in ("0", "1"):
            return self.next_app(environ, start_response)
        headers = [
            ("Content-Type", "application/xml; charset=utf-8"),
            ("Content-Length", str(len(FINITE_DEPTH))),
        ]
        start_response("403 Forbidden", headers)
        return [FINITE_DEPTH]


def make_app(endpoint: str, verbose: int = 1, workspaces: Workspaces | None = None) -> WsgiDAVApp:
    """WsgiDAV over HyCloud: Basic auth with API keys, each user's caches, in-memory locks and
    dead properties."""
    config = {
        "hycloud": {"endpoint": endpoint, "workspaces": workspaces or Workspaces()},
        "provider_mapping": {"/": HyCloudProvider()},
        "http_authenticator": {
            "domain_controller": ApiKeyDomainController,
            "accept_basic": True,
            "accept_digest": False,
            "default_to_digest": False,
            "trusted_auth_header": None,
        },
        "lock_storage": True,
        "property_manager": TreePropertyManager(),
        "verbose": verbose,
        "logging": {"enable": verbose > 1},
        "dir_browser": {"enable": True},
        "middleware_stack": [
            ErrorPrinter,
            HTTPAuthenticator,
            FiniteDepth,
            WsgiDavDirBrowser,
            RequestResolver,  # WsgiDAV's own stack, FiniteDepth added
        ],
    }
    return WsgiDAVApp(config)


def serve(
    endpoint: str,
    host: str = "127.0.0.1",
    port: int = 8080,
    verbose: int = 1,
    workspaces: Workspaces | None = None,
) -> list[str]:
    """Serve until Ctrl-C or SIGTERM, then send what the caches hold; the paths not sent."""
    workspaces = workspaces or Workspaces()
    server = wsgi.Server((host, port), make_app(endpoint, verbose, workspaces), numthreads=10)
    server.prepare()  # until it serves, SIGTERM ends the process at once: nothing is cached yet
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return workspaces.stop()


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends the server as Ctrl-C does, so the caches are sent before the process ends."""
    raise KeyboardInterrupt
