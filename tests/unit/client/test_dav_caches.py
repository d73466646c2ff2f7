"""The WebDAV gateway on the mount's caches, driven in-process over an in-memory cloud (no server,
no network): small PUTs are answered before they are sent and travel together in bundles, what was
put is read and listed at once, a file removed before it was sent costs no request, a large PUT is
in the cloud when it is answered, and stopping the gateway sends everything."""

from __future__ import annotations

import base64
import io
import re
import time
from pathlib import Path

import pytest

from hycloud.sdk import bundles
from hycloud.webdav.auth import ApiKeyDomainController
from hycloud.webdav.server import make_app
from hycloud.webdav.workspaces import Workspaces
from tests.unit.client.test_mount_writeback import FakeCloud

THRESHOLD = 1024


class DavCloud(FakeCloud):
    """The few more calls the gateway makes."""

    small_file_threshold = THRESHOLD

    def cp(self, src: str, dst: str) -> dict:
        self.calls.append("cp")
        self.files[dst] = self.files[src]
        return {}

    def open(self, path: str, mode: str = "rb"):
        self.calls.append("open")
        return io.BytesIO(self.files[path])


@pytest.fixture
def cloud(monkeypatch) -> DavCloud:
    cloud = DavCloud()
    monkeypatch.setattr(bundles, "put_files", lambda client, pairs: client.upload(pairs))
    monkeypatch.setattr(
        ApiKeyDomainController, "_check", lambda self, key: ("ann", cloud, time.monotonic() + 60)
    )
    return cloud


@pytest.fixture
def gateway(cloud, tmp_path):
    workspaces = Workspaces(str(tmp_path), ttl=30.0)
    app = make_app("http://unused", verbose=0, workspaces=workspaces)
    yield Gateway(app), workspaces
    workspaces.stop()


class Gateway:
    def __init__(self, app) -> None:
        self.app = app

    def __call__(self, method: str, path: str, body: bytes = b"", **headers: str) -> tuple[int, bytes]:
        auth = base64.b64encode(b"ann:hck_key").decode()
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "SCRIPT_NAME": "",
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8080",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1:8080",
            "HTTP_AUTHORIZATION": f"Basic {auth}",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": io.StringIO(),
            "wsgi.url_scheme": "http",
            "wsgi.version": (1, 0),
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        environ |= {"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()}
        status: list[str] = []
        out = b"".join(self.app(environ, lambda s, h, exc=None: status.append(s)))
        return int(status[0].split()[0]), out


def _small(i: int) -> bytes:
    return f"file {i}\n".encode() * 10


def test_small_puts_are_answered_at_once_and_sent_together_in_bundles(cloud, gateway):
    dav, workspaces = gateway
    assert dav("MKCOL", "/t/")[0] == 201
    cloud.gate.clear()  # nothing reaches the cloud until the gate opens
    for i in range(30):
        assert dav("PUT", f"/t/f{i:02d}.txt", _small(i))[0] == 201
    assert not any(p.startswith("/t/f") for p in cloud.files)  # answered, not sent yet
    cloud.gate.set()
    assert workspaces.stop() == []
    assert {f"/t/f{i:02d}.txt": _small(i) for i in range(30)}.items() <= cloud.files.items()
    assert sum(len(b) for b in cloud.batches) == 30 and len(cloud.batches) <= 3, cloud.batches


def test_what_was_put_is_read_and_listed_before_it_is_sent(cloud, gateway):
    dav, _ = gateway
    dav("MKCOL", "/r/")
    cloud.gate.clear()
    assert dav("PUT", "/r/new.txt", b"fresh bytes")[0] == 201
    status, body = dav("GET", "/r/new.txt")
    assert (status, body) == (200, b"fresh bytes")
    status, listing = dav("PROPFIND", "/r/", Depth="1")
    assert status == 207 and b"/r/new.txt" in listing
    assert re.search(rb"getcontentlength>11<", listing)
    assert "open" not in cloud.calls and "get" not in cloud.calls and cloud.batches == []
    cloud.gate.set()


def test_a_file_removed_before_it_was_sent_costs_no_request(cloud, gateway):
    dav, workspaces = gateway
    dav("MKCOL", "/d/")
    cloud.gate.clear()
    dav("PUT", "/d/lock.tmp", b"x")
    calls = len(cloud.calls)
    assert dav("DELETE", "/d/lock.tmp")[0] == 204
    cloud.gate.set()
    workspaces.stop()
    assert "rm" not in cloud.calls[calls:] and "/d/lock.tmp" not in cloud.files
    assert all("/d/lock.tmp" not in batch for batch in cloud.batches)
    assert dav("GET", "/d/lock.tmp")[0] == 404


def test_a_large_put_is_in_the_cloud_when_it_is_answered(cloud, gateway):
    dav, _ = gateway
    dav("MKCOL", "/l/")
    data = bytes(range(256)) * 20  # above the small-file threshold
    assert dav("PUT", "/l/big.bin", data)[0] == 201
    assert cloud.files["/l/big.bin"] == data


def test_a_move_sends_the_cached_file_first_and_listings_are_reused(cloud, gateway):
    dav, workspaces = gateway
    dav("MKCOL", "/m/")
    dav("PUT", "/m/a.txt", b"moved")
    status, _ = dav("MOVE", "/m/a.txt", Destination="http://127.0.0.1:8080/m/b.txt")
    assert status == 201 and cloud.files["/m/b.txt"] == b"moved" and "/m/a.txt" not in cloud.files
    assert dav("GET", "/m/b.txt") == (200, b"moved")
    listed = cloud.calls.count("ls")
    for _ in range(3):
        assert dav("PROPFIND", "/m/", Depth="1")[0] == 207
    assert cloud.calls.count("ls") - listed <= 1  # the metadata cache answers within its timeout


def test_a_put_whose_folder_is_missing_is_a_conflict_and_a_whole_tree_propfind_is_refused(cloud, gateway):
    dav, _ = gateway
    assert dav("PUT", "/nope/x.txt", b"x")[0] == 409
    status, body = dav("PROPFIND", "/", Depth="infinity")
    assert status == 403 and b"propfind-finite-depth" in body


def test_a_folder_made_elsewhere_is_seen_by_the_put_that_needs_it(cloud, gateway):
    """The cached listing of / lacks /late; a PUT into it asks the cloud again rather than fail."""
    dav, workspaces = gateway
    assert dav("PROPFIND", "/", Depth="1")[0] == 207
    cloud.dirs.add("/late")  # made by another client
    assert dav("PUT", "/late/x.txt", b"x")[0] == 201
    workspaces.stop()
    assert cloud.files["/late/x.txt"] == b"x"


def test_each_user_has_a_cache_folder_of_their_own(cloud, tmp_path):
    workspaces = Workspaces(str(tmp_path))
    ann, bob = workspaces.for_user("ann", cloud), workspaces.for_user("bob", cloud)  # type: ignore[arg-type]
    try:
        assert ann is workspaces.for_user("ann", cloud)  # type: ignore[arg-type]
        assert ann.files.folder != bob.files.folder
        assert {Path(ann.files.folder).parent, Path(bob.files.folder).parent} == {tmp_path}
    finally:
        assert workspaces.stop() == []
    assert list(tmp_path.iterdir()) == []


def test_a_listing_fetched_while_a_file_is_put_is_kept(cloud):
    """A PUT changes no cached entry (the file is the write-back cache's): a listing fetched
    meanwhile stays usable. Were it dropped, every lookup under concurrent PUTs would list again."""
    from hycloud.caches.meta import MetaCache

    cloud.dirs.add("/f")
    cloud.files |= {"/f/a": b"a", "/f/b": b"b"}
    meta = MetaCache(cloud)  # type: ignore[arg-type]
    listing = cloud.iter_dir

    def iter_dir_while_a_put_lands(path: str, page_size: int = 1000):
        meta.forget()  # what a PUT's change tells the metadata cache: no path of its
        yield from listing(path, page_size)

    cloud.iter_dir = iter_dir_while_a_put_lands  # type: ignore[method-assign]
    assert meta.entry("/f/a")["size"] == 1 and meta.entry("/f/b")["size"] == 1
    assert meta.entry("/f/new") is None
    assert cloud.calls.count("ls") == 1


def test_lookups_that_miss_together_wait_for_one_listing(cloud):
    """Parallel PUTs (rclone's 4 transfers) look up names in one folder at once: one request."""
    import threading

    from hycloud.caches.meta import MetaCache

    cloud.dirs.add("/p")
    meta = MetaCache(cloud)  # type: ignore[arg-type]
    listing, started = cloud.iter_dir, threading.Event()

    def slow_listing(path: str, page_size: int = 1000):
        started.set()
        time.sleep(0.2)  # the cloud answering slowly, while the other lookups arrive
        yield from listing(path, page_size)

    cloud.iter_dir = slow_listing  # type: ignore[method-assign]
    found: list[dict | None] = []
    threads = [threading.Thread(target=lambda i=i: found.append(meta.entry(f"/p/f{i}"))) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert found == [None] * 8 and cloud.calls.count("ls") == 1


def test_a_folder_made_through_the_gateway_is_known_empty_without_a_listing(cloud, gateway):
    dav, _ = gateway
    assert dav("PROPFIND", "/", Depth="1")[0] == 207
    calls = len(cloud.calls)
    assert dav("MKCOL", "/fresh/")[0] == 201
    for i in range(5):
        assert dav("PUT", f"/fresh/f{i}.txt", b"x")[0] == 201
    assert dav("MKCOL", "/fresh/")[0] == 405  # exists: known from the learned entry
    assert cloud.calls[calls:] == ["mkdir"], cloud.calls[calls:]


def test_while_one_lookup_lists_a_folder_again_the_others_answer_from_its_expired_listing(cloud):
    """A slow cloud must not stall every PUT each time a folder's listing expires: one lookup
    lists it again, the others answer from the expired listing meanwhile."""
    import threading

    from hycloud.caches.meta import MetaCache

    cloud.dirs.add("/s")
    cloud.files["/s/old"] = b"o"
    meta = MetaCache(cloud, ttl=0.0)  # type: ignore[arg-type]
    assert meta.entry("/s/old") is not None  # listed once, expired at once
    listing, release = cloud.iter_dir, threading.Event()

    def blocked_listing(path: str, page_size: int = 1000):
        release.wait(5)
        yield from listing(path, page_size)

    cloud.iter_dir = blocked_listing  # type: ignore[method-assign]
    refresher = threading.Thread(target=meta.entry, args=("/s/a",))
    refresher.start()
    time.sleep(0.05)
    started = time.monotonic()
    assert meta.entry("/s/old")["size"] == 1 and meta.entry("/s/b") is None
    assert [e["name"] for e in meta.listing("/s")] == ["old"]
    assert time.monotonic() - started < 1  # not waiting for the listing in flight
    release.set()
    refresher.join(5)
    assert cloud.calls.count("ls") == 2


def test_a_put_is_sent_once_with_its_body_and_an_empty_body_makes_an_empty_file(cloud, gateway):
    dav, workspaces = gateway
    dav("MKCOL", "/e/")
    assert dav("PUT", "/e/empty", b"")[0] == 201
    assert dav("PUT", "/e/full", b"body")[0] == 201
    assert workspaces.stop() == []
    assert cloud.files["/e/empty"] == b"" and cloud.files["/e/full"] == b"body"
    assert sorted(p for batch in cloud.batches for p in batch) == ["/e/empty", "/e/full"]
