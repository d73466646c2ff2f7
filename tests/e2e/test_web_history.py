"""The web app's version history in headless Chromium, against the deployed local cloud: a file
uploaded, then overwritten through the app, lists its first version; Restore writes those bytes
back (checked by sha256 through the API) and keeps the overwritten ones as a version in turn. The
pane fits a phone's 390 px without sideways scroll.

Screenshots at 1280 and 390 px go to tests/e2e/artifacts/web_*history*.png.
"""

from __future__ import annotations

import hashlib
import os
import uuid

import pytest
from selenium.webdriver.common.by import By

from tests.e2e.webdriving import chrome, click, dialog_ok, login, row, shot, site, wait_for

ROWS = "#history-table tr[data-version]"


@pytest.fixture
def browser(tmp_path, deployment, alice):
    driver = chrome(tmp_path / "downloads", 1280, 900)
    with site(deployment, tmp_path / "web") as url:
        try:
            login(driver, url, alice.key)
            yield driver
        finally:
            driver.quit()


def sha256_in_cloud(alice, path: str) -> str:
    answer = alice.api().call(
        "GET", "/v1/files", params={"path": path}, headers={"Accept": "application/octet-stream"}
    )
    assert answer.status_code == 200, answer.text
    return hashlib.sha256(answer.content).hexdigest()


def upload(browser, local) -> None:
    """Upload one file through the app's file input into the folder shown."""
    browser.execute_script("document.querySelector('#upload-status').textContent = ''")
    browser.find_element(By.ID, "upload-input").send_keys(str(local))
    wait_for(browser, lambda d: d.find_element(By.ID, "upload-status").text.startswith("uploaded"), "upload")


def versions(browser) -> list[str]:
    return browser.execute_script(
        f"return [...document.querySelectorAll('{ROWS}')].map((r) => r.dataset.version)"
    )


def test_history_lists_the_first_version_and_restore_brings_its_bytes_back(browser, alice, tmp_path):
    folder = f"wh-{uuid.uuid4().hex[:8]}"
    assert alice.api().call("POST", "/v1/dirs", json={"path": f"/{folder}"}).status_code in (200, 201)
    first, second = b"first version\n" + os.urandom(300), b"second, longer version\n" + os.urandom(900)
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    (tmp_path / "v1" / "notes.txt").write_bytes(first)
    (tmp_path / "v2" / "notes.txt").write_bytes(second)
    path = f"/{folder}/notes.txt"

    browser.find_element(By.CSS_SELECTOR, "#crumbs a").click()
    click(browser, folder, "a.open")
    wait_for(browser, lambda d: d.find_element(By.ID, "crumbs").text.endswith(folder), "folder shown")
    upload(browser, tmp_path / "v1" / "notes.txt")
    upload(browser, tmp_path / "v2" / "notes.txt")  # the same name: an overwrite
    assert sha256_in_cloud(alice, path) == hashlib.sha256(second).hexdigest()

    click(browser, "notes.txt", "button.history")
    wait_for(browser, lambda d: len(versions(d)) == 1, "one earlier version listed")
    table = browser.find_element(By.ID, "history-table").text
    assert "current" in table and "v1" in table and f"{len(first)} B" in table and f"{len(second)} B" in table
    shot(browser, "desktop_history")

    browser.find_element(By.CSS_SELECTOR, f"{ROWS} button.restore").click()
    dialog_ok(browser)
    wait_for(browser, lambda d: "restored notes.txt" in d.find_element(By.ID, "notice").text, "restored")
    assert sha256_in_cloud(alice, path) == hashlib.sha256(first).hexdigest()
    wait_for(browser, lambda d: len(versions(d)) == 2, "the overwritten bytes kept as a version")
    row(browser, "notes.txt")
    shot(browser, "desktop_history_restored")

    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True},
    )
    click(browser, "notes.txt", "button.history")
    wait_for(browser, lambda d: len(versions(d)) == 2, "history at 390 px")
    scroll, inner = browser.execute_script("return [document.scrollingElement.scrollWidth, innerWidth]")
    assert inner == 390 and scroll <= inner, f"sideways scroll at 390 px: {scroll} > {inner}"
    browser.execute_script("document.querySelector('#history').scrollIntoView()")
    shot(browser, "phone_390_history")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
