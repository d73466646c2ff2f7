"""Presigned URLs asked for again when S3 says they expired, for the pieces not yet done.

The cloud's URLs may stop working before their stated life (hycloud_core.presigned), and a long
transfer holds URLs handed out at its start. A piece whose URL S3 refuses as expired is not a
failure: its URL and those of the other pieces still to do are asked for again in one request
(however many workers found theirs expired at once), and only that piece is sent again; pieces
done are never redone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

import requests

from hycloud_core.errors import HyCloudError
from hycloud_core.presigned import expired

MAX_RENEWALS = 3  # per piece, in a row: fresh URLs that S3 keeps refusing as expired are an error
BATCH = 1000  # pieces renewed by one request at most (POST /v1/uploads/urls takes 1,000)

# Fresh URLs for the pieces named, the expired one first; None for a piece that needs no URL any
# more (the cloud holds it already).
Fetch = Callable[[list[str]], Mapping[str, str | None]]


def expired_answer(response: requests.Response) -> bool:
    """Whether S3 refused the request because its presigned URL expired."""
    if response.status_code not in (400, 403):
        return False
    return expired(response.status_code, response.content)


class UrlBook:
    """The presigned URL of each piece of one transfer, renewed from the API when one expires."""

    def __init__(self, urls: Mapping[str, str | None], fetch: Fetch | None, batch: int = BATCH) -> None:
        self.urls: dict[str, str | None] = dict(urls)
        self.fetch, self.batch = fetch, batch
        self.finished: set[str] = set()
        self.renewals: dict[str, int] = {}
        self.requests = 0  # renewal requests made: one per wave of expiries, not one per piece
        self.lock = threading.Lock()

    def add(self, urls: Mapping[str, str | None]) -> None:
        with self.lock:
            self.urls.update(urls)

    def has(self, key: str) -> bool:
        return key in self.urls

    def get(self, key: str) -> str | None:
        return self.urls.get(key)

    def done(self, key: str) -> None:
        """The piece is sent or fetched: its URL is never asked for again."""
        with self.lock:
            self.finished.add(key)

    def worked(self, key: str) -> None:
        """S3 took the piece's URL: a later expiry of it starts a new count of renewals."""
        if key in self.renewals:
            with self.lock:
                self.renewals.pop(key, None)

    def renew(self, key: str, stale: str) -> str | None:
        """A fresh URL for `key`, whose URL `stale` S3 refused as expired (a worker that comes
        second gets the one the first asked for); None when the piece needs none any more."""
        with self.lock:
            if self.urls.get(key) != stale:
                return self.urls.get(key)
            tries = self.renewals[key] = self.renewals.get(key, 0) + 1
            if self.fetch is None or tries > MAX_RENEWALS:
                raise HyCloudError(
                    f"S3 refused the URL of piece {key or 'the file'} as expired"
                    + (f" {tries} times, fresh ones included" if self.fetch else ""),
                    code="url-expired",
                )
            others = [k for k, u in self.urls.items() if k != key and u and k not in self.finished]
            self.urls.update(self.fetch([key, *others[: self.batch - 1]]))
            self.requests += 1
            return self.urls.get(key)


def with_renewal(
    book: UrlBook, key: str, send: Callable[[str], requests.Response]
) -> requests.Response | None:
    """`send(url)` for the piece `key`, again with a fresh URL each time S3 says the one used
    expired; None when the piece turned out to need no URL any more."""
    url = book.get(key)
    while url is not None:
        response = send(url)
        if not expired_answer(response):
            book.worked(key)
            return response
        response.close()
        url = book.renew(key, url)
    return None
