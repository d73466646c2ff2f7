"""Driving the web app in headless Chromium (Selenium + chromedriver): the browser, where the app
is served from, and waits that say what the page showed when they time out."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from tests.loopback_http import serving

ARTIFACTS = Path(__file__).parent / "artifacts"
WEB_DIR = Path(__file__).resolve().parents[2] / "web"
WAIT_S = 60
# "tree" serves web/ from this working tree (to try a change without redeploying); otherwise
# the copy the deploy published to the web bucket is tested.
SOURCE_ENV = "HYCLOUD_WEB_SOURCE"


def _executable(*names: str) -> str:
    for name in names:
        if found := shutil.which(name):
            return found
    raise AssertionError(
        f"none of {names} is installed: run `make setup` (installs chromium, chromium-driver)"
    )


def chrome(downloads: Path, width: int = 1280, height: int = 900) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = _executable("chromium", "chromium-browser")
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    options.add_experimental_option(
        "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(_executable("chromedriver")), options=options)
    driver.downloads = downloads
    return driver


@contextmanager
def logged_in(deployment, tmp_path_factory, key: str) -> Iterator[webdriver.Chrome]:
    """A module's desktop-sized (1280 x 900) headless Chromium, logged in to the web app with `key`
    (downloading into a temp folder); quit on exit."""
    driver = chrome(tmp_path_factory.mktemp("downloads"), 1280, 900)
    with site(deployment, tmp_path_factory.mktemp("web")) as url:
        try:
            login(driver, url, key)
            yield driver
        finally:
            driver.quit()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    """A desktop-sized headless Chromium downloading into tmp_path/downloads (import it as a
    fixture); tests that need another size or a logged-in app make their own."""
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver = chrome(downloads)
    try:
        yield driver
    finally:
        driver.quit()


@contextmanager
def site(deployment, tmp: Path) -> Iterator[str]:
    """The app's URL, on `localhost` while the API answers on 127.0.0.1: every call is cross-origin,
    as on AWS (CloudFront origin vs API origin)."""
    if os.environ.get(SOURCE_ENV) != "tree":
        yield deployment.outputs["LocalWebUrl"].replace("://127.0.0.1:", "://localhost:")
        return
    root = tmp / "site"
    shutil.copytree(WEB_DIR, root)
    (root / "config.json").write_text(json.dumps({"apiUrl": deployment.api_url}))
    with serving(functools.partial(_QuietHandler, directory=str(root))) as url:
        yield url.replace("://127.0.0.1:", "://localhost:") + "/index.html"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def shot(driver, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / f"web_{name}.png"
    driver.save_screenshot(str(target))
    return target


def screenshot(driver, name: str, width: int) -> Path:
    """A screenshot kept as a test artifact, checked to be a PNG of the page at `width` CSS px
    (device scale 1): the proof of what the app looked like, not a file that may be missing."""
    target = shot(driver, name)
    data = target.read_bytes() if target.exists() else b""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000, f"{target}: not a PNG ({len(data)} bytes)"
    shown = struct.unpack(">I", data[16:20])[0]  # the IHDR chunk's width
    assert shown == width, f"{target}: {shown} px wide, not {width}"
    return target


def row(driver, name: str):
    """The entry's row; when it never appears, the failure says what the app showed instead."""
    try:
        return WebDriverWait(driver, WAIT_S).until(
            ec.presence_of_element_located((By.CSS_SELECTOR, f'#entries tr[data-name="{name}"]'))
        )
    except TimeoutException:
        shot(driver, f"no_row_{name.replace('/', '_')}")
        raise AssertionError(
            f"no row {name!r} after {WAIT_S} s; rows {names(driver)}, message {message(driver)!r}"
        ) from None


def names(driver) -> list[str]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#entries tbody tr')].map((r) => r.dataset.name)"
    )


def message(driver) -> str:
    return driver.find_element(By.ID, "message").text


def click(driver, name: str, selector: str) -> None:
    """Click a control in an entry's row. The listing is drawn again after each change (the
    change's answer, then the refreshed folder), so a row found just before may be replaced under
    the click: it is then found anew."""

    def attempt(d) -> bool:
        row(d, name).find_element(By.CSS_SELECTOR, selector).click()
        return True

    WebDriverWait(driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,)).until(attempt)


def dialog_ok(driver, text: str | None = None) -> None:
    WebDriverWait(driver, WAIT_S).until(ec.visibility_of_element_located((By.ID, "dialog")))
    if text is not None:
        field = driver.find_element(By.ID, "dialog-input")
        field.clear()
        field.send_keys(text)
    driver.find_element(By.ID, "dialog-ok").click()


def wait_for(driver, condition, what: str, timeout: float = WAIT_S):
    """condition(driver) until truthy; a timeout says what was awaited and what the app said."""
    try:
        return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(
            condition
        )
    except TimeoutException:
        shot(driver, "timeout")
        raise AssertionError(
            f"{what}: not after {timeout} s; rows {names(driver)}, message {message(driver)!r}"
        ) from None


def login(driver, url: str, key: str) -> None:
    driver.get(url)
    wait_for(driver, lambda d: d.find_element(By.ID, "api-url").get_attribute("value"), "config.json read")
    driver.find_element(By.ID, "api-key").send_keys(key)
    driver.find_element(By.ID, "login-btn").click()
    WebDriverWait(driver, WAIT_S).until(ec.visibility_of_element_located((By.ID, "entries")))


def downloaded(folder: Path, name: str) -> bytes:
    target, deadline = folder / name, time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if target.exists() and not list(folder.glob("*.crdownload")):
            return target.read_bytes()
        time.sleep(0.1)
    raise AssertionError(f"{name} was not downloaded: {os.listdir(folder)}")
