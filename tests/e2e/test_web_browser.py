"""The web file browser in headless Chromium against the deployed local cloud.

The app is loaded from `localhost` while the API and S3 answer on `127.0.0.1`, so every call the
app makes is cross-origin: CORS is exercised as on AWS (CloudFront origin vs API origin).
"""

from __future__ import annotations

import hashlib
import os
import time

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from hycloud_core import content
from hycloud_core.constants import MiB
from tests.e2e.webdriving import WAIT_S, browser, site  # noqa: F401 (browser: a fixture)
from tests.e2e.webdriving import click as _click
from tests.e2e.webdriving import dialog_ok as _dialog_ok
from tests.e2e.webdriving import downloaded as _downloaded
from tests.e2e.webdriving import row as _row
from tests.e2e.webdriving import shot as _shot


@pytest.fixture
def web_url(deployment, tmp_path):
    with site(deployment, tmp_path) as url:
        yield url


def _watch_upload(driver) -> list[float]:
    """Progress values seen until the app says the upload is done."""
    seen, deadline = [], time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value, status = driver.execute_script(
            "return [document.querySelector('#upload-progress').value,"
            " document.querySelector('#upload-status').textContent]"
        )
        seen.append(value)
        if status.startswith("uploaded"):
            return seen
        if message := driver.find_element(By.ID, "message").text:
            raise AssertionError(f"the app reported: {message}")
        time.sleep(0.02)
    raise AssertionError(f"upload did not finish; progress seen: {seen[-5:]}")


def test_browse_upload_download_rename_share_delete(browser, web_url, deployment, alice, tmp_path):  # noqa: F811
    data = os.urandom(20 * MiB)
    local = tmp_path / "big.bin"
    local.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    api = alice.api()

    browser.get(web_url)
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.ID, "api-url").get_attribute("value"))
    assert browser.find_element(By.ID, "api-url").get_attribute("value") == deployment.api_url
    browser.find_element(By.ID, "api-key").send_keys("hck_0000000000000000_" + "x" * 43)
    browser.find_element(By.ID, "login-btn").click()
    WebDriverWait(browser, WAIT_S).until(lambda d: "invalid-key" in d.find_element(By.ID, "message").text)
    assert browser.find_element(By.ID, "browser").get_attribute("hidden") is not None
    browser.get_log("browser")  # drains the refused request's entry: only later errors count
    browser.find_element(By.ID, "api-key").clear()
    browser.find_element(By.ID, "api-key").send_keys(alice.key)
    browser.find_element(By.ID, "login-btn").click()
    WebDriverWait(browser, WAIT_S).until(ec.visibility_of_element_located((By.ID, "entries")))
    assert browser.find_element(By.ID, "who").text == alice.name
    assert browser.execute_script("return sessionStorage.getItem('hycloud.key')") == alice.key

    browser.find_element(By.ID, "mkdir-name").send_keys("web")
    browser.find_element(By.ID, "mkdir-btn").click()
    _click(browser, "web", "a.open")
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.ID, "crumbs").text.endswith("web"))
    assert api.call("GET", "/v1/stat", params={"path": "/web"}).json()["type"] == "dir"

    browser.find_element(By.ID, "upload-input").send_keys(str(local))
    seen = _watch_upload(browser)
    _shot(browser, "uploaded")
    steps = int(browser.find_element(By.ID, "upload-progress").get_attribute("data-steps"))
    assert seen[-1] == 100 and steps >= 3, (seen[:20], steps)
    stored = api.call("GET", "/v1/stat", params={"path": "/web/big.bin"}).json()
    assert stored["storage"] == "large" and stored["content_hash"] == content.hash_file(local)[0]

    _click(browser, "big.bin", "button.download")
    assert hashlib.sha256(_downloaded(browser.downloads, "big.bin")).hexdigest() == digest

    _click(browser, "big.bin", "button.rename")
    _dialog_ok(browser, "renamed.bin")
    _row(browser, "renamed.bin")
    assert api.call("GET", "/v1/stat", params={"path": "/web/big.bin"}).status_code == 404

    _click(browser, "renamed.bin", "button.share")
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.ID, "share-url").get_attribute("value"))
    link = browser.find_element(By.ID, "share-url").get_attribute("value")
    _shot(browser, "shared")
    assert hashlib.sha256(requests.get(link, timeout=60).content).hexdigest() == digest  # no key

    _click(browser, "renamed.bin", "button.delete")
    _dialog_ok(browser)
    WebDriverWait(browser, WAIT_S).until(
        lambda d: not d.find_elements(By.CSS_SELECTOR, '#entries tr[data-name="renamed.bin"]')
    )
    assert api.call("GET", "/v1/stat", params={"path": "/web/renamed.bin"}).status_code == 404
    WebDriverWait(browser, WAIT_S).until(lambda d: "share downloads" in d.find_element(By.ID, "usage").text)
    _shot(browser, "deleted")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
