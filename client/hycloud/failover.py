"""Client failover: the SDK's HTTP layer over two controllers, the primary and the standby
(docs/FAILOVER.md, seed §III-C).

- While the primary answers, every request goes to it; each change it acknowledges is journaled
  (failover_journal.py) until the standby is known to have it (`in_step_at`, polled at most
  every `LAG_POLL_S`).
- When the primary is unreachable (no connection, no answer in time, or a 502/503/504 from its
  gateway, not from the controller, after the usual retries), the client fails over: it replays on the standby each
  journaled change the standby lacks (a small-file write is checked first by one Merkle-exchange
  round on the file's folder: equal leaf hash, nothing to send), then sends the failed request
  there and goes on with the standby. Time to switch: the primary's connect timeout
  (`CONNECT_TIMEOUT_S`) per attempt, two attempts, plus the replay: about 0.1 s when the primary
  refuses connections, at most 6 s when it drops them, plus one request per replayed change.
- While on the standby, the primary is probed at most every `probe_s`. When it answers, switch-back
  holds every new request until each earlier one is acknowledged, copies to the primary what the
  standby has and it lacks (sdk/switch_back.py, by Merkle exchange, through `reconcile`), clears the standby's divergence
  mark so replication resumes, and releases the held requests to the primary.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from hycloud_core import content
from hycloud_core.auth import READ_LIKE
from hycloud_core.errors import HyCloudError

from .failover_journal import PREPARING, UPLOAD, Change, Journal, journal_path, scope_of
from .http import MUTATING, Http
from .transfer.config import DEFAULT, TransferConfig
from .transfer.upload import upload_large

CONNECT_TIMEOUT_S = 3.0
LAG_POLL_S = 10.0
REPLAY_THREADS = 8
DOWN_CODES = ("unreachable", "outcome-unknown")
DOWN_STATUSES = (502, 503, 504)
Reconcile = Callable[[Http, Http, str], int]  # (standby, primary, api key) -> files or folders copied
GATEWAY_CODES = ("internal-error", "http-error")  # an answer without the controller's error body


def _runs(changes: list[Change]) -> Iterator[list[Change]]:
    """Consecutive small-file writes to distinct paths together; any other change alone."""
    run: list[Change] = []
    for change in changes:
        leaf = change.expected_leaf()
        if leaf and leaf[0] not in {held[0] for c in run if (held := c.expected_leaf())}:
            run.append(change)
            continue
        if run:
            yield run
        run = [change] if leaf else []
        if not leaf:
            yield [change]
    if run:
        yield run


def primary_down(err: HyCloudError) -> bool:
    """No connection or answer, or a 5xx from the gateway itself; a 503 the controller gives
    (busy, primary-only) means it is up."""
    return err.code in DOWN_CODES or (err.status in DOWN_STATUSES and err.code in GATEWAY_CODES)


class FailoverHttp:
    """Drop-in for Http (request/json/base) that fails over to the standby and back."""

    def __init__(
        self,
        primary: str,
        standby: str,
        api_key: str,
        timeout: float = 60.0,
        probe_s: float = 2.0,
        journal: Path | str | None = None,
        *,
        reconcile: Reconcile,
        transfer: TransferConfig = DEFAULT,
    ):
        """`journal`: the journal's file (default: beside the client's state, failover_journal.py),
        so what one run had acknowledged is replayed by a later run that finds the primary down.
        `reconcile(standby, primary, api_key)` copies the standby's newer state to the primary at
        switch-back and says how many files or folders it changed; the SDK supplies it
        (sdk/switch_back.py), so this transport does not depend on the SDK."""
        self.reconcile, self.transfer = reconcile, transfer
        self.primary = Http(primary, api_key, timeout, retries=1)
        self.primary.timeout = (CONNECT_TIMEOUT_S, timeout)
        self.standby = Http(standby, api_key, timeout)
        self.api_key, self.probe_s = api_key, probe_s
        self._on_standby = False
        self.journal = Journal(journal or journal_path(), scope_of(primary, api_key))
        self.switches: list[dict[str, Any]] = []  # {"to", "at", "took_s", "replayed"}
        self._cond = threading.Condition()
        self._in_flight = 0
        self._holding = False
        self._next_probe = self._next_lag_poll = 0.0

    @property
    def base(self) -> str:
        return self.primary.base  # what names this deployment (sync pairs), whichever controller answers

    @property
    def on_standby(self) -> bool:
        return self._on_standby

    @property
    def active(self) -> Http:
        """The controller requests go to now."""
        return self.standby if self._on_standby else self.primary

    def json(self, method: str, route: str, **kwargs: Any) -> Any:
        return self.request(method, route, **kwargs).json()

    def request(self, method: str, route: str, **kwargs: Any) -> requests.Response:
        method = method.upper()
        if self.on_standby:
            self._maybe_switch_back()
        else:
            self._poll_lag()
        with self._admitted():
            target = self.active
            try:
                response = target.request(method, route, **kwargs)
            except HyCloudError as err:
                if target is not self.primary or not primary_down(err):
                    raise
                self._fail_over(err)
                target = self.standby
                response = target.request(method, route, **kwargs)
            if target is self.primary and method in MUTATING and (method, route) not in READ_LIKE | PREPARING:
                self._acknowledged(method, route, kwargs)
            return response

    def _acknowledged(self, method: str, route: str, kwargs: dict[str, Any]) -> None:
        """Journal a change the primary acknowledged; if the client failed over while it was on
        its way back, the journal was already replayed: send this one to the standby now."""
        with self._cond:
            if not self._on_standby:
                self.journal.record(method, route, kwargs)
                return
        self.standby.request(method, route, **kwargs)

    # --- admission: switch-back holds new requests until earlier ones are acknowledged ---------
    @contextmanager
    def _admitted(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._holding)
            self._in_flight += 1
        try:
            yield
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    # --- failing over -----------------------------------------------------------------------------
    def _fail_over(self, err: HyCloudError) -> None:
        with self._cond:
            if self.on_standby:
                return  # another request did it
            started, began_at = time.monotonic(), time.time()
            replayed = self._replay_on_standby()
            self._on_standby = True
            self._next_probe = time.monotonic() + self.probe_s
            self.switches.append(
                {
                    "to": "standby",
                    "began_at": began_at,
                    "at": time.time(),
                    "took_s": time.monotonic() - started,
                    "replayed": replayed,
                    "cause": err.code,
                }
            )

    def _replay_on_standby(self) -> int:
        """Send the standby the journaled changes it does not have; how many were sent. Runs of
        small-file writes to distinct paths go side by side, everything else in journal order."""
        changes = self.journal.take()
        have = self._standby_leaves([leaf for c in changes if (leaf := c.expected_leaf())])
        missing = [c for c in changes if not ((leaf := c.expected_leaf()) and have.get(leaf[0]) == leaf[1])]
        with ThreadPoolExecutor(REPLAY_THREADS) as pool:
            for run in _runs(missing):
                list(pool.map(self._replay, run))
        self.journal.done(changes)  # kept until now: a replay cut short is done again by the next run
        return len(missing)

    def _replay(self, change: Change) -> None:
        if change.method == UPLOAD:
            self._replay_upload(change)
            return
        try:
            self.standby.request(change.method, change.route, **change.kwargs)
        except HyCloudError as err:
            if err.status in (404, 409):  # already gone or done there
                return
            if err.status < 400 or err.status >= 500:
                raise  # the standby is not answering: the entry stays for the next attempt
            # listed, not raised: kept on disk, it would fail every later run's failover
            self.journal.lost(change, f"the standby refused it: {err.code}")

    def _replay_upload(self, change: Change) -> None:
        """Upload the local file again, to the standby, unless it holds that version already or
        the local file no longer is what the primary acknowledged."""
        want = change.kwargs["content_hash"]
        try:
            if (
                self.standby.json("GET", "/v1/stat", params={"path": change.route}).get("content_hash")
                == want
            ):
                return
        except HyCloudError as err:
            if err.status != 404:
                raise
        local = change.kwargs["local"]
        if not os.path.exists(local) or content.hash_file(local)[0] != want:
            self.journal.lost(change, "the local file changed since it was uploaded")
            return
        upload_large(
            self.standby, local, change.route, parents=True, keep=change.kwargs["keep"], config=self.transfer
        )

    def uploaded(
        self, local: str | os.PathLike, remote: str, content_hash: str, keep: dict[str, Any]
    ) -> None:
        """The SDK committed a large file: journal it to upload again on failover (or, if the client
        failed over while the commit's answer was on its way, upload it to the standby now)."""
        with self._cond:
            if not self._on_standby:
                self.journal.record_upload(os.fspath(local), remote, content_hash, keep)
                return
        self._replay_upload(
            Change(
                0.0, UPLOAD, remote, {"local": os.fspath(local), "content_hash": content_hash, "keep": keep}
            )
        )

    def _standby_leaves(self, leaves: list[tuple[str, str]]) -> dict[str, str]:
        """One exchange round on the standby: the hashes of the files' folders' children."""
        folders = sorted({path.rsplit("/", 1)[0] or "/" for path, _ in leaves})
        found: dict[str, str] = {}
        for start in range(0, len(folders), 1000):
            answer = self.standby.json(
                "POST", "/v1/merkle/children", json={"paths": folders[start : start + 1000]}
            )
            found.update(
                {s["path"]: s["hash"] for kids in answer.values() for s in kids if s["kind"] == "file"}
            )
        return found

    # --- switching back ---------------------------------------------------------------------------
    def _maybe_switch_back(self) -> None:
        if time.monotonic() < self._next_probe:
            return
        self._next_probe = time.monotonic() + self.probe_s
        try:
            self.primary.request("GET", "/v1/replication")
        except HyCloudError as err:
            if primary_down(err):
                return
            raise
        self.switch_back()

    def switch_back(self) -> None:
        with self._cond:
            if not self.on_standby or self._holding:
                return
            self._holding = True
            self._cond.wait_for(lambda: self._in_flight == 0)  # every earlier request acknowledged
        started = time.monotonic()
        try:
            copied = self.reconcile(self.standby, self.primary, self.api_key)
            self.standby.request("DELETE", "/v1/replication/diverged")
            self._on_standby = False
            self.switches.append(
                {"to": "primary", "at": time.time(), "took_s": time.monotonic() - started, "copied": copied}
            )
        finally:
            with self._cond:
                self._holding = False
                self._cond.notify_all()

    def _poll_lag(self) -> None:
        if time.monotonic() < self._next_lag_poll:
            return
        self._next_lag_poll = time.monotonic() + LAG_POLL_S
        try:
            self.journal.in_step_at(self.primary.json("GET", "/v1/replication").get("in_step_at"))
        except HyCloudError:
            pass  # the next request finds out whether the primary is down
