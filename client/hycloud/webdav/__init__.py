"""WebDAV gateway: HyCloud served over WebDAV (WsgiDAV on cheroot), so Finder, Explorer and davfs2
mount it. Each request authenticates with HTTP Basic, the API key as the password."""

from .server import make_app, serve

__all__ = ["make_app", "serve"]
