"""HyCloud SDK: the filesystem operations, each one call on the REST API (large files straight to S3)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hycloud_core import content, errors, paths
from hycloud_core.constants import MiB
from hycloud_core.errors import ConflictError, HyCloudError, NotFoundError, PayloadTooLargeError
from hycloud_core.merkle.exchange import MAX_PATHS
from hycloud_core.store.trash_records import checked_item_id
from hycloud_core.store.version_records import checked_version_id

from .. import preconditions
from ..config import ClientConfig
from ..failover import FailoverHttp
from ..http import Http, Transport
from ..transfer import Progress, auto, download_large, download_relay, upload_large
from ..transfer.config import DEFAULT, TransferConfig
from ..transfer.plan import Download, TransferPlan, Upload, plan_transfer
from ..verify import check_stored, verified_body
from ..versions import Version, VersionStore
from . import tree_jobs, trees
from .files import open_remote
from .subscribers import ProgressLike, as_progress, report
from .switch_back import reconcile_primary

if TYPE_CHECKING:
    from ..transfer.coded import SessionFor
    from .snapshots import Snapshots

# The delta engine and the erasure coder (numpy, zstandard, zfec: about 0.2 s to import) load in
# the methods that move a file that way, so `hycloud ls` and small files start without them.

OCTET = "application/octet-stream"
LINK_TYPE = "application/vnd.hycloud.link+json"
BELOW = 50_000  # subtree entries of folders only the cloud has, sent with a diff (the route's most)


class HyCloud:
    """A user's view of their files. Failures raise HyCloudError subclasses, also reachable as
    attributes (`except client.NotFoundError`), like boto3's `client.exceptions`."""

    HyCloudError = errors.HyCloudError
    BadRequestError = errors.BadRequestError
    InvalidPathError = errors.InvalidPathError
    UnauthorizedError = errors.UnauthorizedError
    ForbiddenError = errors.ForbiddenError
    NotFoundError = errors.NotFoundError
    ConflictError = errors.ConflictError
    PayloadTooLargeError = errors.PayloadTooLargeError

    def __init__(
        self,
        endpoint: str,
        api_key: str,
        timeout: float = 60.0,
        standby: str | None = None,
        transfer: TransferConfig | None = None,
    ) -> None:
        """`standby`: the standby controller's API URL; with it the client fails over (failover.py).
        `transfer`: how file bytes move (parallelism, timeouts, retries; transfer/config.py)."""
        self.transfer = transfer or DEFAULT
        self.http: Transport = (
            FailoverHttp(endpoint, standby, api_key, timeout, reconcile=_switch_back, transfer=self.transfer)
            if standby
            else Http(endpoint, api_key, timeout)
        )
        self._threshold: int | None = None
        self.exchange_stats: dict[str, float] = {}  # merkle_diff's requests, bytes, cloud reads and time
        self._coded_threshold: int | None | bool = False  # False: not asked yet
        self.upload_rate = 50e6 / 8  # bytes/s until measured: the paper's 50 Mbit/s client link
        self.last_transfer: dict = {}
        self.store = VersionStore(endpoint, api_key)
        self.instance_endpoints: dict[str, str] = {}  # region -> host to reach its bucket by instead
        self.instance_sessions: SessionFor | None = None  # region -> its own HTTP session

    @classmethod
    def from_config(cls, profile: str | None = None, transfer: TransferConfig | None = None) -> HyCloud:
        """The client of a saved profile (`hycloud configure`; default: $HYCLOUD_PROFILE or 'default')."""
        cfg = ClientConfig.load(profile)
        return cls(cfg.endpoint, cfg.api_key, standby=cfg.standby, transfer=transfer)

    # --- metadata ------------------------------------------------------------------------------
    def info(self) -> dict:
        info = self.http.json("GET", "/v1/whoami")
        self._threshold = info["small_file_threshold"]
        self._coded_threshold = info.get("coded_threshold")
        return info

    def whoami(self) -> str:
        return self.info()["user"]

    def instances(self) -> list[dict]:
        """The deployment's instances (region, bucket, S3 endpoint), home first."""
        return self.http.json("GET", "/v1/instances")["instances"]

    @property
    def small_file_threshold(self) -> int:
        return (
            self._threshold
            if self._threshold is not None
            else self.info().get("small_file_threshold", 2 * MiB)
        )

    @property
    def coded_threshold(self) -> int | None:
        """Larger files are erasure-coded by default; None when the deployment codes none (fewer
        than three instances)."""
        if self._coded_threshold is False:
            self.info()
        return self._coded_threshold or None

    def stat(self, path: str) -> dict:
        return self.http.json("GET", "/v1/stat", params={"path": paths.normalize(path)})

    def ls(self, path: str = "/", page_size: int = 1000) -> list[dict]:
        return list(self.iter_dir(path, page_size))

    def iter_dir(self, path: str = "/", page_size: int = 1000) -> Iterator[dict]:
        cursor = None
        while True:
            params = {
                "path": paths.normalize(path),
                "limit": page_size,
                **({"cursor": cursor} if cursor else {}),
            }
            page = self.http.json("GET", "/v1/dirs", params=params)
            yield from page["entries"]
            cursor = page.get("cursor")
            if not cursor:
                return

    def merkle_children(self, paths_: list[str]) -> dict:
        """One round of the Merkle exchange: {path: [summary, ...]} (hycloud_core.merkle.exchange).

        A round may take several requests: at most MAX_PATHS paths each, and the paths an answer
        left out (the cloud ran out of time recomputing hashes; it kept what it did) asked again.
        """
        wanted, reply = list(dict.fromkeys(paths_)), {}
        while wanted:
            asked = wanted[:MAX_PATHS]
            got = self.http.json("POST", "/v1/merkle/children", json={"paths": asked})
            if not any(p in got for p in asked):
                raise HyCloudError("the Merkle exchange answered nothing", code="bad-answer", status=502)
            reply.update(got)
            wanted = [p for p in wanted if p not in reply]
        return reply

    def merkle_diff(self, body: bytes) -> bytes:
        """One request of the one-round exchange (hycloud_core.merkle.sketch): the cloud's binary
        answer, with the subtrees of folders only the cloud has (up to BELOW entries; a cloud
        before them ignores the ask). `exchange_stats` adds up the requests, bytes and the
        cloud's reads and time."""
        response = self.http.request(
            "POST",
            "/v1/merkle/diff",
            params={"below": BELOW},
            data=body,
            headers={"Content-Type": OCTET, "Accept": OCTET},
        )
        stats = self.exchange_stats
        for key, value in (
            ("requests", 1),
            ("sent", len(body)),
            ("received", len(response.content)),
            ("reads", int(response.headers.get("x-hycloud-reads", 0))),
            ("read_rounds", int(response.headers.get("x-hycloud-read-rounds", 0))),
            ("read_requests", int(response.headers.get("x-hycloud-read-requests", 0))),
            ("server_ms", float(response.headers.get("x-hycloud-server-ms", 0))),
        ):
            stats[key] = stats.get(key, 0) + value
        return response.content

    def merkle_root(self) -> str:
        """The hex Merkle hash of the whole namespace."""
        return self.http.json("GET", "/v1/merkle/root")["hash"]

    # --- directories and namespace changes ---------------------------------------------------------
    def mkdir(self, path: str, parents: bool = False, exist_ok: bool = True) -> dict:
        """Make a directory; with `exist_ok=False` an existing one is a ConflictError, as `mkdir`."""
        if not exist_ok and self.exists(path):
            raise ConflictError(f"{paths.normalize(path)} already exists", code="already-exists")
        return self.http.json("POST", "/v1/dirs", json={"path": paths.normalize(path), "parents": parents})

    def exists(self, path: str) -> bool:
        try:
            self.stat(path)
            return True
        except NotFoundError:
            return False

    def rmdir(self, path: str, recursive: bool = False, progress: Progress | None = None) -> dict:
        """Remove a folder; with `recursive`, it and all it holds move into the trash (`trash`
        names the item). A cloud before the trash removes a large tree by a job this call follows."""
        response = self.http.request(
            "DELETE", "/v1/dirs", params={"path": paths.normalize(path), "recursive": str(recursive).lower()}
        )
        if response.status_code == 202:
            job = tree_jobs.follow(self.http, response.json(), progress)
            return {"removed": job["src"], "files": job["done"]}
        return response.json()

    def rm(self, path: str, expect: str | None = None) -> dict:
        """Move a file into the trash; with `expect`, only while it is that version
        (`preconditions.py`)."""
        params, headers = {"path": paths.normalize(path)}, preconditions.headers(expect)
        return self.http.json("DELETE", "/v1/files", params=params, headers=headers)

    # --- the trash: what rm and rm -r removed, kept for the trash retention ----------------------
    def trash(self) -> dict:
        """What the trash holds, newest first (`items`), and how long it keeps them (`retention_s`)."""
        return self.http.json("GET", "/v1/trash")

    def trash_restore(self, item: str, to: str | None = None) -> dict:
        """Put a trash item back where it was, or at `to`; ConflictError (409 `already-exists`)
        when that path is taken. Returns {"restored": item, "entry": what is there now}."""
        body = {"item": checked_item_id(item)}
        if to is not None:
            body["to"] = paths.normalize(to)
        return self.http.json("POST", "/v1/trash/restore", json=body)

    def trash_empty(self, item: str | None = None, progress: Progress | None = None) -> dict:
        """Remove one trash item (or all of them) for good; {"emptied": [item ids]}. What items
        of many files hold is removed by a job, which this call follows to its end (`job`)."""
        body = {} if item is None else {"item": checked_item_id(item)}
        done = self.http.json("POST", "/v1/trash/empty", json=body)
        if done.get("job", {}).get("state") == "running":
            done["job"] = tree_jobs.follow(self.http, done["job"], progress)
        return done

    @property
    def snapshots(self) -> Snapshots:
        """Read-only copies of folders: create, list, ls, get_bytes, restore, rm (sdk/snapshots.py)."""
        from .snapshots import Snapshots

        return Snapshots(self)

    # --- version history: what overwrites and deletes replaced, kept for the retention ------------
    def versions(self, path: str) -> dict:
        """`path`'s kept earlier versions, newest first (`versions`), and what it holds now
        (`current`, None when nothing); NotFoundError when it has neither."""
        return self.http.json("GET", "/v1/versions", params={"path": paths.normalize(path)})

    def restore(self, path: str, version: str | None = None, to: str | None = None) -> dict:
        """Write a kept version of `path` (the newest when `version` is None) back there, or at `to`;
        what it replaces is kept in turn. Returns {"restored": version, "entry": file written}."""
        body = {"path": paths.normalize(path)}
        if version is not None:
            body["version"] = checked_version_id(version)
        if to is not None:
            body["to"] = paths.normalize(to)
        return self.http.json("POST", "/v1/restore", json=body)

    def mv(self, src: str, dst: str, progress: Progress | None = None, expect: str | None = None) -> dict:
        """Move or rename; a file at `dst` is replaced (and kept as a version) unless `expect`
        names what `dst` must hold (`preconditions.ABSENT`: nothing)."""
        return self._tree_op("/v1/move", src, dst, progress, expect)

    def cp(self, src: str, dst: str, progress: Progress | None = None, expect: str | None = None) -> dict:
        return self._tree_op("/v1/copy", src, dst, progress, expect)

    def _tree_op(
        self, route: str, src: str, dst: str, progress: Progress | None, expect: str | None = None
    ) -> dict:
        """Move or copy; a large tree is handled by a job this call follows to its end."""
        body = {"src": paths.normalize(src), "dst": paths.normalize(dst)}
        response = self.http.request("POST", route, json=body, headers=preconditions.headers(expect))
        if response.status_code == 202:
            tree_jobs.follow(self.http, response.json(), progress)
            return self.stat(dst)
        return response.json()

    # --- file transfer -------------------------------------------------------------------------
    def put_bytes(
        self,
        path: str,
        data: bytes,
        parents: bool = False,
        mtime: float | None = None,
        mode: int | None = None,
        expect: str | None = None,
    ) -> dict:
        """Store a small file; fails unless the server reports storing exactly these bytes.
        `mtime` and `mode` (permission bits) are kept with it when given; `expect` is the version
        the path must hold (`preconditions.py`)."""
        digest = hashlib.sha256(data).hexdigest()
        entry = self.http.json(
            "PUT",
            "/v1/files",
            params={"path": paths.normalize(path), "parents": str(parents).lower(), **_keep(mtime, mode)},
            data=data,
            headers={"Content-Type": OCTET, "x-hycloud-sha256": digest, **preconditions.headers(expect)},
        )
        check_stored(path, entry.pop("sha256", None), digest)
        return {**entry, "content_hash": content.hash_bytes(data)}  # one name for a file's hash

    def put(
        self,
        local: str | Path,
        remote: str,
        parents: bool = False,
        progress: ProgressLike = None,
        base: str | Path | None = None,
        delta_kind: str = "version",
        upload_rate: float | None = None,
        force_delta: bool = False,
        via: str = "auto",
        mtime: float | None = None,
        mode: int | None = None,
        coded: bool | None = None,
        expect: str | None = None,
    ) -> dict:
        """Upload a file: small ones through the API to EFS, large ones straight to S3, or as a
        delta when eq. 2 says it pays: against `base` (a local copy of a version the cloud has) or,
        with `via="auto"`, against the version this client last transferred at `remote`.
        `coded=True` stores a large file erasure-coded across the instances (docs/GEO.md); unset,
        files above the deployment's `coded_threshold` are (with `via="auto"`), `False` never.
        `mtime` and `mode` (permission bits) are kept with the file when given. With `expect` (the
        version the path must hold, `preconditions.py`) the commit fails with a 409 over any other,
        and a delta is sent only against that very version."""
        local, remote, progress = Path(local), paths.normalize(remote), as_progress(progress)
        size, keep, headers = os.path.getsize(local), _keep(mtime, mode), preconditions.headers(expect)
        known = self.store.get(remote)
        plan = plan_transfer(
            Upload(
                size,
                self.small_file_threshold,
                self.coded_threshold if coded is None and via == "auto" else None,
                via,
                coded,
                base=base is not None,
                signature=known is not None
                and known.signature is not None
                and expect in (None, known.content_hash),
            )
        )
        for way in plan.modes:
            if way == "small":
                try:
                    data = local.read_bytes()
                    entry = self.put_bytes(
                        remote, data, parents=parents, mtime=mtime, mode=mode, expect=expect
                    )
                    report(progress, f"upload {local.name}", size)
                    return self._noted(entry, "small")
                except PayloadTooLargeError:
                    continue  # the deployment's threshold is lower than we thought
            if way == "delta":
                result = self._put_delta(
                    local,
                    remote,
                    progress,
                    base,
                    delta_kind,
                    upload_rate,
                    force_delta,
                    plan.force_delta,
                    known,
                )
                if result is not None:
                    return self._journaled(local, remote, result, keep)
                continue
            if way == "coded":
                return self._put_coded(local, remote, parents, progress, keep, headers)
            if way == "direct":
                return self._put_direct(local, remote, parents, progress, keep, headers)
        raise AssertionError(f"the plan {plan} ended in a mode that declined")

    def _put_direct(
        self, local: Path, remote: str, parents: bool, progress: Progress, keep: dict, headers: dict
    ) -> dict:
        started = time.perf_counter()
        result = upload_large(
            self.http, local, remote, parents, progress, keep=keep, headers=headers, config=self.transfer
        )
        self._journaled(local, remote, result, keep)
        if result.get("sent_bytes", 0) > 4 * MiB:  # measured upload rate for eq. 2
            self.upload_rate = result["sent_bytes"] / max(time.perf_counter() - started, 1e-6)
            self.store.add_rate("up", self.upload_rate)
        auto.remember(self.store, remote, result["content_hash"], local)
        return self._noted(result, "direct")

    def _put_delta(
        self,
        local: Path,
        remote: str,
        progress: Progress | None,
        base: str | Path | None,
        delta_kind: str,
        upload_rate: float | None,
        force_delta: bool,
        always: bool,
        known: Version | None,
    ) -> dict | None:
        """The delta upload (against `base`, else against the kept checksum list of `known`, the
        version at the path) when it pays or is forced (`always`: with the checksum list), else
        None (upload the whole file)."""
        from ..transfer.delta import signature_upload

        if base is not None:
            result = self._put_against(
                local, remote, progress, Path(base), delta_kind, upload_rate, force_delta
            )
        else:
            assert known is not None and known.signature is not None  # the plan's condition
            rates = auto.rates(self.store)
            pays = (lambda size, d: True) if always else (lambda size, d: auto.upload_pays(size, d, rates))
            result = signature_upload(
                self.http, local, remote, known.content_hash, known.signature, pays, progress, self.transfer
            )
        if result is None:
            return None
        auto.learn_job(
            self.store,
            os.path.getsize(local),
            result["sent_bytes"],
            result,
            result.get("job_seconds", 0),
            "up",
        )
        auto.remember(self.store, remote, result["content_hash"], local)
        return self._noted(result, "delta")

    def _put_against(
        self,
        local: Path,
        remote: str,
        progress: Progress | None,
        base: Path,
        delta_kind: str,
        upload_rate: float | None,
        force_delta: bool,
    ) -> dict | None:
        """The delta upload against a local copy of the path's version, sent without a stat first;
        None (upload directly) when there is nothing at the path to patch."""
        from ..transfer.delta import delta_upload

        rate = upload_rate or self.store.rate("up") or self.upload_rate
        known = self.store.get(remote)
        try:
            return delta_upload(
                self.http,
                local,
                remote,
                base,
                rate,
                delta_kind,
                progress,
                force=force_delta,
                s3_efs_rate=auto.rates(self.store).s3_efs,
                base_hash=known.content_hash if known and known.matches(base) else None,
                config=self.transfer,
            )
        except NotFoundError:
            return None  # no folder there yet: the whole file is the upload
        except ConflictError as err:
            if err.code == "version-mismatch" and not self.exists(remote):
                return None  # nothing there to patch: the whole file is the upload
            raise

    def _put_coded(
        self,
        local: Path,
        remote: str,
        parents: bool,
        progress: Progress,
        keep: dict,
        headers: dict | None = None,
    ) -> dict:
        from ..transfer.coded import upload_coded

        result = upload_coded(
            self.http, local, remote, parents, progress, keep, headers=headers, config=self.transfer
        )
        auto.remember(self.store, remote, result["content_hash"], local)  # a base for the next delta
        return self._noted(self._journaled(local, remote, result, keep), "coded")

    def _journaled(self, local: Path, remote: str, result: dict, keep: dict) -> dict:
        """Tell a failover client of a committed large file (it replays it on the standby)."""
        if hasattr(self.http, "uploaded"):
            self.http.uploaded(local, remote, result["content_hash"], keep)
        return result

    def _noted(self, result: dict, mode: str) -> dict:
        self.last_transfer = {"mode": mode, **{k: result[k] for k in ("kind", "sent_bytes") if k in result}}
        return {**result, "mode": mode}

    def open(self, path: str, mode: str = "rb", **kwargs):
        """A file object: seekable ranged reads ("rb"), or written locally and uploaded on close ("wb")."""
        return open_remote(self, path, mode, **kwargs)

    def _fetch(self, path: str):
        return self.http.request(
            "GET",
            "/v1/files",
            params={"path": paths.normalize(path)},
            headers={"Accept": f"{OCTET}, {LINK_TYPE}"},
        )

    def _fresh_url(self, path: str, info: dict) -> Callable[[], str]:
        """The large file's S3 URL asked for again (the one in `info` expired), for the same version."""

        def renew() -> str:
            response = self._fetch(path)
            again = response.json() if response.headers.get("Content-Type", "").startswith(LINK_TYPE) else {}
            if again.get("content_hash") != info["content_hash"]:
                raise ConflictError(f"{path} changed while it was downloaded", code="changed-while-open")
            return again["url"]

        return renew

    def get_bytes(self, path: str, progress: ProgressLike = None) -> bytes:
        """A file's bytes in memory, whatever its size (a large file comes from S3, verified)."""
        from ..transfer.coded import download_coded

        response = self._fetch(path)
        if not response.headers.get("Content-Type", "").startswith(LINK_TYPE):
            data = verified_body(path, response)
            report(as_progress(progress), f"download {path}", len(data))
            return data
        with tempfile.TemporaryDirectory(prefix="hycloud-") as folder:
            info, target = response.json(), Path(folder) / "file"
            if "erasure" in info:
                download_coded(
                    self.http,
                    path,
                    target,
                    as_progress(progress),
                    self.instance_endpoints,
                    config=self.transfer,
                )
                return target.read_bytes()
            local = download_large(
                info, target, as_progress(progress), self._fresh_url(path, info), self.transfer
            )
            return local.read_bytes()

    # --- trees ---------------------------------------------------------------------------------
    def upload_tree(
        self,
        local_dir: str | Path,
        remote_dir: str,
        progress: ProgressLike = None,
        follow_symlinks: bool = False,
        on_skip: Callable[[Path], None] | None = None,
    ) -> trees.TreeResult:
        """Upload the contents of `local_dir` into `remote_dir`; symlinks are skipped (and listed
        in the result) unless `follow_symlinks`."""
        return trees.upload_tree(self, local_dir, remote_dir, progress, follow_symlinks, on_skip)

    def download_tree(
        self, remote_dir: str, local_dir: str | Path, progress: ProgressLike = None
    ) -> trees.TreeResult:
        """Download the contents of `remote_dir` into `local_dir`."""
        return trees.download_tree(self, remote_dir, local_dir, progress)

    def get(
        self,
        remote: str,
        local: str | Path,
        progress: ProgressLike = None,
        via: str = "auto",
        base: str | Path | None = None,
        delta_mode: str = "auto",
    ) -> Path:
        """Download a file to `local`, replacing it only once the content verified.

        Large files come straight from S3 (`via="direct"`), through the EFS relay (`via="relay"`),
        or as a delta against an older local version (`base`; with `via="delta"` the existing
        `local` file is the base). `via="auto"` chooses by eq. 2 with this client's measured rates,
        taking the existing `local` file as the base.
        """
        local, remote, progress = Path(local), paths.normalize(remote), as_progress(progress)
        known = self.store.get(remote)
        held = local.is_file() and known is not None and known.matches(local)
        rsync = delta_mode == "rsync"
        ahead = Download(
            local.stat().st_size if held else 0,  # the new version's size is not known yet: about the same
            via=via,
            base=base is not None,
            rsync=rsync,
            held=held,
            rates=auto.rates(self.store) if held and via == "auto" else None,
        )
        first = plan_transfer(ahead)
        if first.first == "delta" and known is not None:
            if self._get_from_known(remote, local, progress, known, first.version_aware) is not None:
                return local
        response = self._fetch(remote)
        if not response.headers.get("Content-Type", "").startswith(LINK_TYPE):
            self.last_transfer = {"mode": "small"}
            return _write_verified(remote, response, local, progress)
        info = response.json()
        if base is None and via in ("auto", "delta") and local.exists():
            base = local  # the file being replaced is the base of a delta
        base_hash = known.content_hash if base is not None and known and known.matches(Path(base)) else None
        plan = plan_transfer(
            Download(
                info["size"],
                "coded" if "erasure" in info else "large",
                via,
                base=ahead.base,
                rsync=rsync,
                local=local.exists(),
                current=base_hash == info["content_hash"],
                rates=auto.rates(self.store) if via == "auto" else None,
            )
        )
        for way in plan.modes:
            if way == "same":
                self.last_transfer = {"mode": "same"}
                return local
            if way == "coded":
                return self._get_coded(remote, local, progress)
            if way == "delta":
                assert base is not None  # a delta is planned only with a base
                if self._get_delta(remote, info, Path(base), local, progress, plan, base_hash):
                    return local
                continue  # no checksum list fits in memory: the whole file
            return self._get_whole(remote, info, local, progress, way)
        raise AssertionError(f"the plan {plan} ended in a mode that declined")

    def _get_delta(
        self,
        remote: str,
        info: dict,
        base: Path,
        local: Path,
        progress: Progress,
        plan: TransferPlan,
        base_hash: str | None,
    ) -> bool:
        """The delta download of `local` against `base`; False when no delta fits (whole file)."""
        from ..transfer.delta import delta_download

        started = time.perf_counter()
        result = delta_download(
            self.http,
            info,
            base,
            local,
            progress,
            mode="auto" if plan.version_aware else "rsync",
            base_hash=base_hash,
            config=self.transfer,
        )
        if result is not None:
            self._delta_done(remote, info, local, result, started)
        return result is not None

    def _get_whole(self, remote: str, info: dict, local: Path, progress: Progress, mode: str) -> Path:
        """The whole file, straight from S3 (`direct`) or through the EFS relay (`relay`)."""
        started = time.perf_counter()
        queued: dict[str, Any] = {}
        if mode == "relay":
            download_relay(self.http, remote, local, progress, queued, self.instance_endpoints, self.transfer)
        else:
            download_large(info, local, progress, self._fresh_url(remote, info), self.transfer)
        rate = info["size"] / max(time.perf_counter() - started, 1e-6)
        if info["size"] > 4 * MiB:
            self.store.add_rate("relay_down" if mode == "relay" else "down", rate)
        auto.remember(self.store, remote, info["content_hash"], local)
        self.last_transfer = {"mode": mode, "kind": "full", **queued}
        return local

    def _get_from_known(
        self, remote: str, local: Path, progress: Progress, known: Version, version_aware: bool = True
    ) -> dict | None:
        """A delta against the local file, whose version (`known`) this client knows: asked for at
        once, one request fewer than a stat first; None leaves it to the usual way."""
        from ..transfer.delta import delta_download, delta_from_known

        if not version_aware:
            return self._get_by_signature(remote, local, progress, known)
        started = time.perf_counter()
        try:
            answer = delta_from_known(self.http, remote, known.content_hash)
        except ConflictError:  # the cloud no longer holds that version: the checksum list at once
            return self._get_by_signature(remote, local, progress, known)
        if answer is None:
            return None
        info, ran = answer
        if ran is None:
            self.last_transfer = {"mode": "same"}
            return {"kind": "same"}
        job_seconds = time.perf_counter() - started
        result = delta_download(
            self.http,
            info,
            local,
            local,
            progress,
            base_hash=known.content_hash,
            ran=ran,
            config=self.transfer,
        )
        if result is not None:
            result["job_seconds"] = result["steps"]["job"] = job_seconds
            self._delta_done(remote, info, local, result, started)
        return result

    def _get_by_signature(self, remote: str, local: Path, progress: Progress, known: Version) -> dict | None:
        """An rsync-style delta against the local file, its checksum list sent at once at the block
        the file's chunk-size state (kept from the last transfer) chooses: the answer names the
        version it leads to, so no stat first. None leaves it to the usual way (not a large file)."""
        from ..transfer.delta import delta_download

        started = time.perf_counter()
        guess = {"path": remote, "size": local.stat().st_size, "chunk_state": known.chunk_state}
        try:
            result = delta_download(
                self.http,
                guess,
                local,
                local,
                progress,
                mode="rsync",
                base_hash=known.content_hash,
                config=self.transfer,
                learned=lambda version, state: self.store.set_chunk_state(remote, version, state),
            )
        except (ConflictError, NotFoundError):
            return None
        if result is None:
            return None
        info = {**guess, **result.pop("file")}
        self._delta_done(remote, info, local, result, started)
        return result

    def _delta_done(self, remote: str, info: dict, local: Path, result: dict, started: float) -> None:
        """Learn from the delta job that ran, remember the version `local` now holds."""
        if result["kind"] != "same":
            auto.learn_job(
                self.store, info["size"], result["received_bytes"], result, result["job_seconds"], "down"
            )
        auto.remember(self.store, remote, info["content_hash"], local, info.get("chunk_state"))
        self.last_transfer = {"mode": "delta", **result, "seconds": time.perf_counter() - started}

    def _get_coded(self, remote: str, local: Path, progress: Progress) -> Path:
        from ..transfer.coded import download_coded

        result = download_coded(
            self.http,
            remote,
            local,
            progress,
            self.instance_endpoints,
            self.instance_sessions,
            config=self.transfer,
        )
        self.last_transfer = {"mode": "coded", **result}
        return local


def _switch_back(standby: Http, primary: Http, api_key: str) -> int:
    """What FailoverHttp runs when the primary is back: the standby's newer state copied to it."""
    return reconcile_primary(HyCloud(standby.base, api_key), HyCloud(primary.base, api_key))


def _write_verified(path: str, response, local: Path, progress: Progress) -> Path:
    tmp = local.with_name(local.name + ".hycloud-part")
    try:
        data = verified_body(path, response)
        tmp.write_bytes(data)
        tmp.replace(local)
        report(progress, f"download {local.name}", len(data))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return local


def _keep(mtime: float | None, mode: int | None) -> dict:
    """The file metadata an upload asks the cloud to keep."""
    return {k: v for k, v in (("mtime", mtime), ("mode", mode)) if v is not None}
