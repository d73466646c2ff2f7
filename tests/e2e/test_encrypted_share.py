"""A share link of an encrypted file, decrypted by the web app in headless Chromium (WebCrypto).

`hycloud crypt share` prints `share.html#s=TOKEN&k=KEY`: the page fetches the ciphertext through
the public share route and saves the plaintext byte-exact; the stored object holds no plaintext;
the same link refuses the object once a byte of it is changed. The format's refusals (cut,
reordered, altered) are proved in tests/unit/test_crypto_share_*.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid

import pytest
import requests
from selenium.webdriver.common.by import By

from hycloud.encrypted import CloudStore, EncryptedFolder, share
from hycloud.encrypted.counters import Counters, default_path
from hycloud_core.constants import MiB
from tests.e2e.webdriving import browser, downloaded, site, wait_for  # noqa: F401 (browser: a fixture)

pytestmark = pytest.mark.e2e


def _open_share(driver, url: str) -> None:
    driver.get("about:blank")  # else a URL differing only in its fragment does not load the page
    driver.get(url)
    wait_for(
        driver,
        lambda d: d.find_element(By.ID, "share-save").is_displayed() or d.find_element(By.ID, "message").text,
        "the share page decrypted or refused",
    )


def _open_folder(user, vault: str, secret: str) -> EncryptedFolder:
    return EncryptedFolder.open(CloudStore(user.sdk(), vault), "", secret.encode(), Counters(default_path()))


def test_crypt_share_decrypts_in_the_browser(alice, deployment, browser, tmp_path, monkeypatch):  # noqa: F811
    secret = uuid.uuid4().hex
    monkeypatch.setenv("HYCLOUD_PASSPHRASE", secret)
    marker = b"SHARE-MARKER-" + uuid.uuid4().hex.encode()
    src, vault = tmp_path / "src", f"/shared-vault-{uuid.uuid4().hex[:8]}"
    src.mkdir()
    files = {
        "notes secret.txt": marker * (300_000 // len(marker)),  # one segment
        "photo.bin": os.urandom(3 * MiB // 4) + marker + os.urandom(3 * MiB // 4),  # two
    }
    for name, data in files.items():
        (src / name).write_bytes(data)
    sdk = alice.sdk()
    sdk.mkdir(vault)  # made in-process (one CLI start less); the put and a share go through the CLI
    EncryptedFolder.create(
        CloudStore(sdk, vault), alice.name, secret.encode(), counters=Counters(default_path())
    )
    alice.cli("crypt", "put", str(src), vault)

    with site(deployment, tmp_path) as web_url:
        out = alice.cli(
            "--json", "crypt", "share", f"{vault}/photo.bin", "--expires", "1h", "--web-url", web_url
        )
        made = {"photo.bin": json.loads(out.stdout)}
        notes = share.share(sdk, vault, _open_folder(alice, vault, secret), "notes secret.txt", 3600, web_url)
        made["notes secret.txt"] = {**notes.share, "url": notes.url, "stored": notes.stored}
        for name, link in made.items():
            assert "#s=" in link["url"] and "&k=" in link["url"]
            _open_share(browser, link["url"])
            assert browser.find_element(By.ID, "message").text == ""
            browser.find_element(By.ID, "share-save").click()
            got = downloaded(browser.downloads, name)
            assert hashlib.sha256(got).hexdigest() == hashlib.sha256(files[name]).hexdigest()

        stored = made["photo.bin"]["stored"]
        sealed = sdk.get_bytes(stored)
        served = requests.get(deployment.api_url + made["photo.bin"]["url_path"], timeout=60)
        assert served.status_code == 200 and served.content == sealed  # what the browser received
        assert len(sealed) > len(files["photo.bin"]) and marker not in sealed and b"photo" not in sealed
        assert stored.startswith(vault + "/.hcshare/")

        tampered = bytearray(sealed)
        tampered[len(sealed) // 2] ^= 1
        sdk.put_bytes(stored, bytes(tampered))  # the link serves the file's current content
        _open_share(browser, made["photo.bin"]["url"])
        assert "Refused" in browser.find_element(By.ID, "message").text
        assert not browser.find_element(By.ID, "share-save").is_displayed()
