"""The web file browser in headless Chromium against the deployed local cloud.

The app is loaded from `localhost` while the API and S3 answer on `127.0.0.1`, so every call the
app makes is cross-origin: CORS is exercised as on AWS (CloudFront origin vs API origin).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest
import requests
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from hycloud_core import content
from hycloud_core.constants import MiB

ARTIFACTS = Path(__file__).parent / "artifacts"
WAIT_S = 60


def _executable(*names: str) -> str:
    for name in names:
        if found := shutil.which(name):
            return found
    raise AssertionError(
        f"none of {names} is installed: run `make setup` (installs chromium, chromium-driver)"
    )


@pytest.fixture
def browser(tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    options = webdriver.ChromeOptions()
    options.binary_location = _executable("chromium", "chromium-browser")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    options.add_experimental_option(
        "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(_executable("chromedriver")), options=options)
    driver.downloads = downloads
    try:
        yield driver
    finally:
        driver.quit()


def _shot(driver, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"web_{name}.png"))


def _row(driver, name: str):
    """The entry's row; when it never appears, the failure says what the app showed instead."""
    try:
        return WebDriverWait(driver, WAIT_S).until(
            ec.presence_of_element_located((By.CSS_SELECTOR, f'#entries tr[data-name="{name}"]'))
        )
    except TimeoutException:
        _shot(driver, f"no_row_{name}")
        shown = [r.get_attribute("data-name") for r in driver.find_elements(By.CSS_SELECTOR, "#entries tr")]
        message = driver.find_element(By.ID, "message").text
        raise AssertionError(f"no row {name!r} after {WAIT_S} s; rows {shown}, message {message!r}") from None


def _click(driver, name: str, selector: str) -> None:
    """Click a control in an entry's row. The listing is drawn again after each change (the
    change's answer, then the refreshed folder), so a row found just before may be replaced under
    the click: it is then found anew."""

    def attempt(d) -> bool:
        _row(d, name).find_element(By.CSS_SELECTOR, selector).click()
        return True

    WebDriverWait(driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,)).until(attempt)


def _dialog_ok(driver, text: str | None = None) -> None:
    WebDriverWait(driver, WAIT_S).until(ec.visibility_of_element_located((By.ID, "dialog")))
    if text is not None:
        field = driver.find_element(By.ID, "dialog-input")
        field.clear()
        field.send_keys(text)
    driver.find_element(By.ID, "dialog-ok").click()


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


def _downloaded(folder: Path, name: str) -> bytes:
    target, deadline = folder / name, time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if target.exists() and not list(folder.glob("*.crdownload")):
            return target.read_bytes()
        time.sleep(0.1)
    raise AssertionError(f"{name} was not downloaded: {os.listdir(folder)}")


def test_browse_upload_download_rename_share_delete(browser, deployment, alice, tmp_path):
    site = deployment.outputs["LocalWebUrl"].replace("://127.0.0.1:", "://localhost:")
    data = os.urandom(20 * MiB)
    local = tmp_path / "big.bin"
    local.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    api = alice.api()

    browser.get(site)
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
