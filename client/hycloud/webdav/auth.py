"""HTTP Basic for the gateway: the password is a HyCloud API key, the user name must be its owner's.
A request that logs in is handed a client for that key and its user's caches (`workspaces.py`).

A key is checked once with `whoami` and then trusted for `KEY_TTL_S`, so a revoked key stops
working within that time (the API itself refuses it at once on the next call anyway). The user
name must be the name `hycloud whoami` prints for that key: a key pasted under the wrong account
name is refused instead of silently showing another user's files.
"""

from __future__ import annotations

import threading
import time

from wsgidav.dc.base_dc import BaseDomainController

from hycloud_core.errors import HyCloudError

from ..sdk import HyCloud
from .workspaces import Workspaces

KEY_TTL_S = 60.0
CLIENT_KEY = "hycloud.client"
CACHES_KEY = "hycloud.caches"


class ApiKeyDomainController(BaseDomainController):
    """Authenticates with the API; hands the request a client for that key."""

    def __init__(self, wsgidav_app, config: dict) -> None:
        super().__init__(wsgidav_app, config)
        self.endpoint = config["hycloud"]["endpoint"]
        self.workspaces: Workspaces = config["hycloud"]["workspaces"]
        self._known: dict[str, tuple[str, HyCloud, float]] = {}
        self._lock = threading.Lock()

    def __str__(self) -> str:
        return f"{self.__class__.__name__}({self.endpoint})"

    def get_domain_realm(self, path_info: str, environ: dict | None) -> str:
        return "HyCloud"

    def require_authentication(self, realm: str, environ: dict | None) -> bool:
        return True

    def supports_http_digest_auth(self) -> bool:
        return False  # the server never holds the keys, so it cannot answer digest challenges

    def basic_auth_user(self, realm: str, user_name: str, password: str, environ: dict) -> bool:
        known = self._check(password)
        if known is None or known[0] != user_name:
            return False
        environ[CLIENT_KEY] = known[1]
        environ[CACHES_KEY] = self.workspaces.for_user(user_name, known[1])
        return True

    def _check(self, key: str) -> tuple[str, HyCloud, float] | None:
        with self._lock:
            known = self._known.get(key)
        if known and known[2] > time.monotonic():
            return known
        client = HyCloud(self.endpoint, key)
        try:
            user = client.whoami()
        except HyCloudError:
            return None
        known = (user, client, time.monotonic() + KEY_TTL_S)
        with self._lock:
            self._known[key] = known
        return known
