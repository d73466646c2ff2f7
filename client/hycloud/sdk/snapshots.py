"""Snapshots in the SDK (`HyCloud.snapshots`): read-only copies of a folder's tree, made, listed,
browsed, read, restored and removed, each one call on /v1/snapshots.

A snapshot's paths are within it: "/" is the folder it copied. Restores never overwrite: a
taken destination is a ConflictError (409 `already-exists`) unless `replace`, which moves what
is there to the trash first.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from hycloud_core import paths
from hycloud_core.errors import NotFoundError
from hycloud_core.store.snapshot_records import checked_name

from ..transfer import download_large
from ..verify import verified_body
from . import tree_jobs

if TYPE_CHECKING:
    from ..transfer import Progress
    from .client import HyCloud

OCTET = "application/octet-stream"
LINK_TYPE = "application/vnd.hycloud.link+json"


class Snapshots:
    """One user's snapshots over a HyCloud client."""

    def __init__(self, client: HyCloud) -> None:
        self.client, self.http = client, client.http

    def _route(self, name: str, tail: str = "") -> str:
        return f"/v1/snapshots/{checked_name(name)}{tail}"

    def list(self) -> dict:
        """Every snapshot, newest first (`snapshots`), and what they hold together (`totals`)."""
        return self.http.json("GET", "/v1/snapshots")

    def create(self, path: str, name: str | None = None, progress: Progress | None = None) -> dict:
        """Snapshot the folder `path` read-only as it is now; the snapshot's record, ready. A tree
        the request did not copy is copied by a job, which this call follows to its end
        (`progress`: files copied); ConflictError for a taken name (or `busy` while one is being
        made of it), TreeJobFailed when the job failed (`quota-exceeded`, say)."""
        body = {"path": paths.normalize(path)}
        if name is not None:
            body["name"] = checked_name(name)
        made = self.http.json("POST", "/v1/snapshots", json=body)
        if "job" not in made:
            return made["snapshot"]
        tree_jobs.follow(self.http, made["job"], progress)
        return self.get(made["snapshot"]["name"])

    def get(self, name: str) -> dict:
        """One snapshot's record; NotFoundError when there is none of that name."""
        checked_name(name)
        for snap in self.list()["snapshots"]:
            if snap["name"] == name:
                return snap
        raise NotFoundError(f"no snapshot named {name}", code="snapshot-not-found")

    def ls(self, name: str, path: str = "/") -> Iterator[dict]:
        """The entries of a folder in the snapshot, page after page."""
        cursor = ""
        while True:
            params = {"path": paths.normalize(path), **({"cursor": cursor} if cursor else {})}
            page = self.http.json("GET", self._route(name, "/dirs"), params=params)
            yield from page["entries"]
            if not page.get("cursor"):
                return
            cursor = page["cursor"]

    def stat(self, name: str, path: str) -> dict:
        return self.http.json("GET", self._route(name, "/stat"), params={"path": paths.normalize(path)})

    def get_bytes(self, name: str, path: str) -> bytes:
        """A file's bytes as the snapshot holds them (a large file from S3, verified)."""
        route, params = self._route(name, "/files"), {"path": paths.normalize(path)}
        headers = {"Accept": f"{OCTET}, {LINK_TYPE}"}
        response = self.http.request("GET", route, params=params, headers=headers)
        if not response.headers.get("Content-Type", "").startswith(LINK_TYPE):
            return verified_body(path, response)

        def renew() -> str:
            return self.http.request("GET", route, params=params, headers=headers).json()["url"]

        with tempfile.TemporaryDirectory(prefix="hycloud-") as folder:
            target = Path(folder) / "file"
            download_large(response.json(), target, None, renew, self.client.transfer)
            return target.read_bytes()

    def restore(
        self,
        name: str,
        path: str = "/",
        to: str | None = None,
        replace: bool = False,
        progress: Progress | None = None,
    ) -> dict:
        """Copy `path` of the snapshot (all of it by default) back where it was, or to `to`; a
        tree of many entries is restored by a job, which this follows to its end (`progress`:
        files copied). Returns {"restored": snapshot, "entry": what is at the destination now}."""
        body: dict = {"path": paths.normalize(path), "replace": replace}
        if to is not None:
            body["to"] = paths.normalize(to)
        done = self.http.json("POST", self._route(name, "/restore"), json=body)
        if "job" not in done:
            return done
        job = tree_jobs.follow(self.http, done, progress)
        return {"restored": self.get(name), "entry": self.client.stat(job["dst"]), "job": job}

    def rm(self, name: str) -> dict:
        """Remove a snapshot for good; {"removed": snapshot}."""
        return self.http.json("DELETE", self._route(name))
