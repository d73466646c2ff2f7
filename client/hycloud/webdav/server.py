"""The gateway's WSGI app and its cheroot server (127.0.0.1 unless told otherwise)."""

from __future__ import annotations

from cheroot import wsgi
from wsgidav.wsgidav_app import WsgiDAVApp

from .auth import ApiKeyDomainController
from .properties import TreePropertyManager
from .provider import HyCloudProvider


def make_app(endpoint: str, verbose: int = 1) -> WsgiDAVApp:
    """WsgiDAV over HyCloud: Basic auth with API keys, in-memory locks and dead properties."""
    config = {
        "hycloud": {"endpoint": endpoint},
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
    }
    return WsgiDAVApp(config)


def serve(endpoint: str, host: str = "127.0.0.1", port: int = 8080, verbose: int = 1) -> None:
    """Serve until interrupted."""
    server = wsgi.Server((host, port), make_app(endpoint, verbose), numthreads=10)
    try:
        server.start()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
