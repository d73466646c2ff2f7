"""`hycloud crypt share` below the CLI: the stored object is ciphertext that the key in the URL's
fragment (and only it) decrypts to the file, and the folder is found from a plaintext path."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from hycloud.encrypted import EncryptedFolder, MemoryStore, share, upload
from hycloud.encrypted.counters import Counters
from hycloud_core.crypto import share_format
from hycloud_core.crypto.keys import KdfParams
from hycloud_core.errors import ConflictError, NotFoundError

MARKER = b"SHARE-CLIENT-MARKER-91c2"


class _Http:
    def __init__(self) -> None:
        self.made: list[dict] = []

    def json(self, method: str, route: str, json: dict) -> dict:
        assert (method, route) == ("POST", "/v1/shares")
        self.made.append(json)
        return {"id": "t" * 32, "path": json["path"], "url_path": "/v1/shared/" + "t" * 32}


class _Client:
    """The SDK calls `share` makes: exists, put (of a local file), and the share route."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files, self.http = files, _Http()

    def exists(self, path: str) -> bool:
        return path in self.files

    def put(self, local: Path, remote: str, parents: bool = False) -> dict:
        self.files[remote] = Path(local).read_bytes()
        return {"path": remote}


@pytest.fixture
def folder(tmp_path) -> EncryptedFolder:
    made = EncryptedFolder.create(MemoryStore(), "alice", b"pw", KdfParams(n=2**10), Counters())
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "plan b.txt").write_bytes(MARKER * 60_000)  # 1.4 MiB: two segments
    upload.put_tree(made, tmp_path, "")
    return made


def test_share_stores_ciphertext_the_fragment_key_opens(folder):
    client = _Client({"/vault/.hcenc": b"{}"})
    made = share.share(client, "/vault", folder, "docs/plan b.txt", 3600, "http://web.example/app/index.html")

    parts = urlsplit(made.url)
    assert (parts.scheme, parts.netloc, parts.path, parts.query) == (
        "http",
        "web.example",
        "/app/share.html",
        "",
    )
    fragment = parse_qs(parts.fragment)
    assert fragment["s"] == ["t" * 32]
    key = base64.urlsafe_b64decode(fragment["k"][0] + "=")
    assert len(key) == 32

    assert made.stored.startswith("/vault/.hcshare/") and client.http.made == [
        {"path": made.stored, "expires_in": 3600}
    ]
    blob = client.files[made.stored]
    assert MARKER not in blob and b"plan b" not in blob
    opened = share_format.decode(key, blob)
    assert opened.name == "plan b.txt"
    assert hashlib.sha256(opened.data).digest() == hashlib.sha256(MARKER * 60_000).digest()


def test_each_share_has_its_own_key_and_object(folder):
    client = _Client({})
    one = share.share(client, "/vault", folder, "docs/plan b.txt", 60, "http://w/")
    two = share.share(client, "/vault", folder, "docs/plan b.txt", 60, "http://w/")
    assert one.stored != two.stored and one.url.split("k=")[1] != two.url.split("k=")[1]


def test_a_folder_or_a_missing_file_is_refused(folder):
    with pytest.raises(ConflictError):
        share.share(_Client({}), "/vault", folder, "docs", 60, "http://w/")
    with pytest.raises(NotFoundError):
        share.share(_Client({}), "/vault", folder, "docs/nope.txt", 60, "http://w/")


def test_the_folder_is_the_nearest_ancestor_with_a_header():
    client = _Client({"/home/vault/.hcenc": b"{}"})
    assert share.folder_of(client, "/home/vault/docs/a.txt") == ("/home/vault", "docs/a.txt")
    with pytest.raises(NotFoundError):
        share.folder_of(client, "/home/other/a.txt")


def test_page_url_next_to_the_app():
    key = bytes(32)
    assert share.page_url("https://d.example", "x", key).startswith("https://d.example/share.html#s=x&k=")
    assert share.page_url("http://h:1/b/index.html", "x", key).startswith("http://h:1/b/share.html#")


def test_the_cli_prints_the_link_and_needs_the_web_url(monkeypatch, tmp_path, capsys):
    """`hycloud crypt share` wired over the in-memory folder: --json answer, key never in `stored`."""
    import json

    from hycloud.cli.main import main

    store = MemoryStore()
    client = _Client({"/vault/.hcenc": b"{}"})
    monkeypatch.setattr("hycloud.encrypted.CloudStore", lambda c, root: store)
    monkeypatch.setattr("hycloud.sdk.client.HyCloud.from_config", classmethod(lambda cls, *a, **k: client))
    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "state" / "state.sqlite3"))
    monkeypatch.setenv("HYCLOUD_PASSPHRASE", "pw")
    monkeypatch.delenv("HYCLOUD_WEB_URL", raising=False)
    made = EncryptedFolder.create(store, "alice", b"pw", KdfParams(n=2**10))
    (tmp_path / "a.txt").write_bytes(MARKER)
    upload.put_file(made, tmp_path / "a.txt", "a.txt")

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as ended:
            main(list(args))
            raise SystemExit(0)
        out = capsys.readouterr()
        return int(ended.value.code or 0), out.out, out.err

    code, _, err = run("crypt", "share", "/vault/a.txt")
    assert code != 0 and "--web-url" in err
    monkeypatch.setenv("HYCLOUD_WEB_URL", "https://app.example/")
    code, out, _ = run("--json", "crypt", "share", "/vault/a.txt", "-e", "2h")
    answer = json.loads(out)
    assert code == 0 and answer["url"].startswith("https://app.example/share.html#s=")
    assert client.http.made == [{"path": answer["stored"], "expires_in": 7200}]
    key = base64.urlsafe_b64decode(parse_qs(urlsplit(answer["url"]).fragment)["k"][0] + "=")
    assert share_format.decode(key, client.files[answer["stored"]]).data == MARKER
