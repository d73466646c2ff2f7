"""Getting files back through the web app in headless Chromium, against the deployed local cloud,
with one browser and one user of its own for the module:

- version history: a file uploaded, then overwritten through the app, lists its first version;
  Restore writes those bytes back (sha256 through the API) and keeps the overwritten ones as a
  version in turn; the pane fits a phone's 390 px without sideways scroll;
- the Trash view: a folder deleted with its row's Delete and three files deleted by multi-select
  are listed there (name, folder, size, when, by whom); the three restored at once come back byte
  for byte but the one whose path was taken since, which is named and overwrites nothing; it is
  restored at another path with Restore to…, the folder with its Restore; a delete's Undo brings
  the file back at once; the view has no sideways scroll at 390 or 360 px; Empty trash asks first
  (Cancel keeps everything) and then removes all.

Screenshots at 1280 and 390 px are kept as tests/e2e/artifacts/web_*history*.png and
web_*trash*.png, each checked to be a PNG of that width.
"""

from __future__ import annotations

import hashlib
import os
import uuid

import pytest
from selenium.webdriver.common.by import By

from tests.e2e.admin_cli import make_user
from tests.e2e.webdriving import (
    click,
    dialog_ok,
    logged_in,
    message,
    names,
    row,
    screenshot,
    wait_for,
)

ROWS = "#history-table tr[data-version]"
TRASH_ROWS = "#trash-table tbody tr"
DESKTOP, PHONE = 1280, 390


@pytest.fixture(scope="module")
def user(deployment):
    """A user of this module's own: its trash holds only what these tests delete."""
    return make_user(deployment, "webrestore")


@pytest.fixture(scope="module")
def browser(tmp_path_factory, deployment, user):
    with logged_in(deployment, tmp_path_factory, user.key) as driver:
        yield driver


def width(browser, px: int | None) -> None:
    """The page at a phone's width (`px`), or back at the window's own (None)."""
    if px is None:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        return
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": px, "height": 844, "deviceScaleFactor": 1, "mobile": True},
    )


def no_sideways_scroll(browser, px: int) -> None:
    scroll, inner = browser.execute_script("return [document.scrollingElement.scrollWidth, innerWidth]")
    assert inner == px and scroll <= inner, f"sideways scroll at {px} px: {scroll} > {inner}"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_in_cloud(user, path: str) -> str:
    answer = user.api().call(
        "GET", "/v1/files", params={"path": path}, headers={"Accept": "application/octet-stream"}
    )
    assert answer.status_code == 200, (path, answer.text)
    return sha(answer.content)


def put(user, path: str, data: bytes) -> None:
    answer = user.api().call("PUT", "/v1/files", params={"path": path, "parents": "true"}, data=data)
    assert answer.status_code in (200, 201), answer.text


def stat(user, path: str) -> int:
    return user.api().call("GET", "/v1/stat", params={"path": path}).status_code


def home(browser) -> None:
    """Show the top folder (its crumb, once the first listing has drawn the crumbs)."""

    def attempt(d) -> bool:
        found = d.find_elements(By.CSS_SELECTOR, "#crumbs a")
        if found:
            found[0].click()
        return bool(found)

    wait_for(browser, attempt, "the top folder's crumb clicked")


def open_folder(browser, name: str) -> None:
    click(browser, name, "a.open")
    wait_for(browser, lambda d: d.find_element(By.ID, "crumbs").text.endswith(name), f"{name} shown")


def upload(browser, local) -> None:
    """Upload one file through the app's file input into the folder shown."""
    browser.execute_script("document.querySelector('#upload-status').textContent = ''")
    browser.find_element(By.ID, "upload-input").send_keys(str(local))
    wait_for(browser, lambda d: d.find_element(By.ID, "upload-status").text.startswith("uploaded"), "upload")


def versions(browser) -> list[str]:
    return browser.execute_script(
        f"return [...document.querySelectorAll('{ROWS}')].map((r) => r.dataset.version)"
    )


def trashed(browser) -> list[str]:
    """The paths the Trash view lists, in its order."""
    return browser.execute_script(
        f"return [...document.querySelectorAll('{TRASH_ROWS}')].map((r) => r.dataset.path)"
    )


def in_trash_row(browser, path: str, selector: str) -> None:
    """Click a control in the Trash view's row for `path` (found anew if redrawn under the click)."""

    def attempt(d) -> bool:
        d.find_element(By.CSS_SELECTOR, f'{TRASH_ROWS}[data-path="{path}"] {selector}').click()
        return True

    wait_for(browser, attempt, f"{selector} of {path} clicked")


def notice(text: str):
    return lambda d: text in d.find_element(By.ID, "notice").text


def test_history_lists_the_first_version_and_restore_brings_its_bytes_back(browser, user, tmp_path):
    folder = f"wh-{uuid.uuid4().hex[:8]}"
    assert user.api().call("POST", "/v1/dirs", json={"path": f"/{folder}"}).status_code in (200, 201)
    first, second = b"first version\n" + os.urandom(300), b"second, longer version\n" + os.urandom(900)
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    (tmp_path / "v1" / "notes.txt").write_bytes(first)
    (tmp_path / "v2" / "notes.txt").write_bytes(second)
    path = f"/{folder}/notes.txt"

    home(browser)
    open_folder(browser, folder)
    upload(browser, tmp_path / "v1" / "notes.txt")
    upload(browser, tmp_path / "v2" / "notes.txt")  # the same name: an overwrite
    assert sha256_in_cloud(user, path) == sha(second)

    click(browser, "notes.txt", "button.history")
    wait_for(browser, lambda d: len(versions(d)) == 1, "one earlier version listed")
    table = browser.find_element(By.ID, "history-table").text
    assert "current" in table and "v1" in table and f"{len(first)} B" in table and f"{len(second)} B" in table
    screenshot(browser, "desktop_history", DESKTOP)

    browser.find_element(By.CSS_SELECTOR, f"{ROWS} button.restore").click()
    dialog_ok(browser)
    wait_for(browser, notice("restored notes.txt"), "restored")
    assert sha256_in_cloud(user, path) == sha(first)
    wait_for(browser, lambda d: len(versions(d)) == 2, "the overwritten bytes kept as a version")
    row(browser, "notes.txt")
    screenshot(browser, "desktop_history_restored", DESKTOP)

    width(browser, PHONE)
    click(browser, "notes.txt", "button.history")
    wait_for(browser, lambda d: len(versions(d)) == 2, "history at 390 px")
    no_sideways_scroll(browser, PHONE)
    browser.execute_script("document.querySelector('#history').scrollIntoView()")
    screenshot(browser, "phone_390_history", PHONE)
    browser.find_element(By.ID, "history-close").click()
    width(browser, None)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def test_trash_view_restores_files_and_a_folder_and_empties_after_asking(browser, user):
    folder = f"/wt-{uuid.uuid4().hex[:8]}"
    files = {
        "one.txt": b"one\n" + os.urandom(500),
        "two.bin": os.urandom(3000),
        "three.txt": b"three\n" * 20,
        "sub/a.txt": b"a" * 100,
        "sub/deep/b.bin": os.urandom(4096),
        "junk.txt": b"junk",
    }
    for rel, data in files.items():
        put(user, f"{folder}/{rel}", data)
    home(browser)
    open_folder(browser, folder[1:])
    wait_for(browser, lambda d: names(d) == ["sub", "junk.txt", "one.txt", "three.txt", "two.bin"], "listed")

    click(browser, "sub", "button.delete")
    dialog_ok(browser)
    wait_for(browser, lambda d: "sub" not in names(d), "the folder deleted")
    for name in ("one.txt", "three.txt", "two.bin"):
        click(browser, name, "input.pick")
    browser.find_element(By.ID, "bulk-delete").click()
    dialog_ok(browser)
    wait_for(browser, lambda d: names(d) == ["junk.txt"], "three files deleted")
    wait_for(browser, notice("moved 3 item(s) to the trash"), "the bulk delete's notice")
    assert [stat(user, f"{folder}/{p}") for p in ("sub", "one.txt", "three.txt", "two.bin")] == [404] * 4
    newer = b"a new one.txt, made after the delete"
    put(user, f"{folder}/one.txt", newer)

    browser.find_element(By.ID, "trash-open").click()
    files_deleted = {f"{folder}/{name}" for name in ("one.txt", "three.txt", "two.bin")}
    wait_for(
        browser, lambda d: set(trashed(d)) == {f"{folder}/sub", *files_deleted}, "four deletions in the trash"
    )
    assert not browser.find_element(By.ID, "entries").is_displayed()  # the trash took the list's place
    table = browser.find_element(By.ID, "trash-table").text
    assert f"sub/ 2 file(s)\nin {folder}" in table and "4.1 KiB" in table  # 4,196 B
    assert "2.9 KiB" in table and table.count("by you") == 4
    screenshot(browser, "desktop_trash", DESKTOP)

    for path in sorted(files_deleted):  # one.txt's path is taken now: it is named, the others restored
        in_trash_row(browser, path, "input.pick")
    browser.find_element(By.ID, "trash-restore").click()
    wait_for(browser, lambda d: "1 of 3 not restored" in message(d), "the taken path named")
    assert f"{folder}/one.txt: something is there now" in message(browser)
    wait_for(
        browser, lambda d: set(trashed(d)) == {f"{folder}/sub", f"{folder}/one.txt"}, "two restored at once"
    )
    for rel in ("three.txt", "two.bin"):
        assert sha256_in_cloud(user, f"{folder}/{rel}") == sha(files[rel])
    assert sha256_in_cloud(user, f"{folder}/one.txt") == sha(newer)  # nothing overwritten
    logged = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]  # read, so emptied
    assert [e for e in logged if "/v1/trash/restore" not in e["message"]] == []  # the 409 only

    in_trash_row(browser, f"{folder}/one.txt", "button.restore-to")
    dialog_ok(browser, f"{folder}/one-before.txt")
    wait_for(browser, notice(f"at {folder}/one-before.txt"), "restored at another path")
    assert sha256_in_cloud(user, f"{folder}/one-before.txt") == sha(files["one.txt"])

    in_trash_row(browser, f"{folder}/sub", "button.restore")
    wait_for(browser, notice(f"restored {folder}/sub"), "the folder restored")
    assert trashed(browser) == [] and browser.find_element(By.ID, "trash-none").is_displayed()
    for rel in ("sub/a.txt", "sub/deep/b.bin"):
        assert sha256_in_cloud(user, f"{folder}/{rel}") == sha(files[rel])
    screenshot(browser, "desktop_trash_restored", DESKTOP)
    browser.find_element(By.ID, "trash-back").click()
    back = ["sub", "junk.txt", "one-before.txt", "one.txt", "three.txt", "two.bin"]
    wait_for(browser, lambda d: names(d) == back, "all back in the list")

    width(browser, PHONE)
    click(browser, "junk.txt", "button.delete")
    dialog_ok(browser)
    wait_for(browser, notice(f"moved {folder}/junk.txt to the trash"), "junk deleted")
    assert "junk.txt" not in names(browser)
    browser.find_element(By.CSS_SELECTOR, "#notice button.undo").click()  # the delete's Undo
    wait_for(browser, notice(f"restored {folder}/junk.txt"), "undone")
    row(browser, "junk.txt")
    assert sha256_in_cloud(user, f"{folder}/junk.txt") == sha(files["junk.txt"])
    click(browser, "junk.txt", "button.delete")
    dialog_ok(browser)
    wait_for(browser, lambda d: "junk.txt" not in names(d), "junk deleted again")
    browser.find_element(By.ID, "trash-open").click()
    wait_for(browser, lambda d: trashed(d) == [f"{folder}/junk.txt"], "junk in the trash")
    no_sideways_scroll(browser, PHONE)
    screenshot(browser, "phone_390_trash", PHONE)
    width(browser, 360)
    no_sideways_scroll(browser, 360)

    browser.find_element(By.ID, "trash-empty").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "dialog").is_displayed(), "asked first")
    assert "for good" in browser.find_element(By.ID, "dialog-text").text
    browser.find_element(By.ID, "dialog-cancel").click()
    assert len(user.api().call("GET", "/v1/trash").json()["items"]) == 1  # Cancel kept it
    browser.find_element(By.ID, "trash-empty").click()
    dialog_ok(browser)
    wait_for(browser, notice("emptied the trash: 1 item(s)"), "emptied")
    assert user.api().call("GET", "/v1/trash").json()["items"] == []
    assert stat(user, f"{folder}/junk.txt") == 404
    browser.find_element(By.ID, "trash-back").click()
    width(browser, None)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
