"""Share links of encrypted files, decrypted in the browser; the server never sees the key.

The file is decrypted here (every check of `download` made), re-encrypted whole under a fresh
random key in the share format (hycloud_core.crypto.share_format), and stored as an ordinary file
in the folder's `.hcshare/` area under a random name. An ordinary share link is made of that
object, and the printed URL is the web app's `share.html` with the link's token and the key in
the fragment (`#s=TOKEN&k=KEY`): browsers never send a fragment, so the key stays with whoever
holds the URL. Revoking the share (`hycloud share --revoke ID`) ends the link.
"""

from __future__ import annotations

import base64
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urljoin

from hycloud_core.crypto import header, share_format
from hycloud_core.errors import ConflictError, NotFoundError

from . import download
from .folder import EncryptedFolder, split

if TYPE_CHECKING:
    from ..sdk.client import HyCloud

AREA = ".hcshare"
PAGE = "share.html"


@dataclass(frozen=True)
class MadeShare:
    share: dict  # the API's answer (id, expires, url_path, ...)
    stored: str  # the ciphertext's path on the cloud
    url: str  # the web page with the token and key in its fragment


def plaintext(folder: EncryptedFolder, rel: str) -> tuple[str, bytes]:
    """The file's name and checked bytes (through `download`, so nothing unchecked is returned)."""
    entry = folder.entry(rel)
    if entry is None:
        raise NotFoundError(f"{rel} is not in this encrypted folder")
    if entry["t"] != "file":
        raise ConflictError(f"{rel} is a folder; share a file", code="is-a-directory")
    with tempfile.TemporaryDirectory(prefix="hycloud-share-") as tmp:
        local = Path(tmp) / "plain"
        download.get(folder, rel, local)
        return split(rel)[-1], local.read_bytes()


def page_url(web_url: str, token: str, key: bytes) -> str:
    """`share.html` next to the web app's page, token and key in the fragment only."""
    base = web_url if web_url.endswith((".html", "/")) else web_url + "/"
    fragment = urlencode({"s": token, "k": base64.urlsafe_b64encode(key).rstrip(b"=").decode()})
    return urljoin(base, PAGE) + "#" + fragment


def folder_of(client: HyCloud, path: str) -> tuple[str, str]:
    """(the encrypted folder, the path inside it) of a plaintext path such as `/vault/docs/a.txt`:
    the nearest ancestor holding a header (`.hcenc`)."""
    parts = split(path)
    for cut in range(len(parts) - 1, 0, -1):
        root = "/" + "/".join(parts[:cut])
        if client.exists(f"{root}/{header.NAME}"):
            return root, "/".join(parts[cut:])
    raise NotFoundError(f"no encrypted folder (a {header.NAME} header) above {path}", code="not-encrypted")


def share(
    client: HyCloud, remote: str, folder: EncryptedFolder, rel: str, expires_in: int, web_url: str
) -> MadeShare:
    """Re-encrypt `rel` of the folder at `remote` under a fresh key, store it and link it."""
    name, data = plaintext(folder, rel)
    key = share_format.new_key()
    stored = f"{remote.rstrip('/')}/{AREA}/{secrets.token_hex(16)}"
    with tempfile.TemporaryDirectory(prefix="hycloud-share-") as tmp:
        sealed = Path(tmp) / "sealed"
        sealed.write_bytes(share_format.encode(key, name, data))
        del data
        client.put(sealed, stored, parents=True)  # small or large, as any file
    made = client.http.json("POST", "/v1/shares", json={"path": stored, "expires_in": expires_in})
    return MadeShare(made, stored, page_url(web_url, made["id"], key))
