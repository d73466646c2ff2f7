"""The web file browser's handling of many files in headless Chromium, against the deployed local
cloud: sortable columns, search by name (the folder, and everything below it), drag and drop of
files and folders, multi-select with bulk delete, move and zip download, the preview pane, and a
layout that fits a phone (no sideways scroll at 390 and 360 px, dates on one line).

Screenshots at 1280, 390 and 360 px go to tests/e2e/artifacts/web_*.png, each checked to be a PNG of
that width.
"""

from __future__ import annotations

import hashlib
import io
import struct
import uuid
import zipfile
import zlib

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.e2e.webdriving import (
    click,
    dialog_ok,
    downloaded,
    logged_in,
    names,
    row,
    screenshot,
    wait_for,
)

DESKTOP = 1280


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one colour: what an image preview must decode."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory, deployment, alice):
    with logged_in(deployment, tmp_path_factory, alice.key) as driver:
        yield driver


@pytest.fixture
def folder(browser, alice):
    """A fresh folder of alice's, shown in the browser at desktop width."""
    name = f"wf-{uuid.uuid4().hex[:8]}"
    assert alice.api().call("POST", "/v1/dirs", json={"path": f"/{name}"}).status_code in (200, 201)
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    crumb(browser, 0)
    click(browser, name, "a.open")
    wait_for(browser, lambda d: d.find_element(By.ID, "crumbs").text.endswith(name), f"{name} shown")
    return f"/{name}"


def crumb(browser, index: int) -> None:
    """Click a crumb; the crumbs are drawn anew by each listing, so a stale one is found again."""

    def attempt(d) -> bool:
        if not (found := d.find_elements(By.CSS_SELECTOR, "#crumbs a")):
            return False  # the first listing has not answered yet
        found[index].click()
        return True

    wait_for(browser, attempt, f"crumb {index} clicked")


def put(alice, path: str, data: bytes, mtime: float | None = None) -> None:
    params = {"path": path, "parents": "true", **({"mtime": mtime} if mtime else {})}
    answer = alice.api().call("PUT", "/v1/files", params=params, data=data)
    assert answer.status_code in (200, 201), answer.text


def read(alice, path: str):
    """A file's bytes as stored (binary: the first Accept type is one API Gateway passes as is)."""
    return alice.api().call(
        "GET", "/v1/files", params={"path": path}, headers={"Accept": "application/octet-stream"}
    )


def stat(alice, path: str):
    return alice.api().call("GET", "/v1/stat", params={"path": path})


def reload(browser, folder: str) -> None:
    """Show the folder again (what a user's click on its crumb does)."""
    crumb(browser, -1)
    wait_for(
        browser, lambda d: d.find_element(By.ID, "crumbs").text.endswith(folder.rsplit("/", 1)[1]), "shown"
    )


def test_sortable_columns_and_search(browser, alice, folder):
    put(alice, f"{folder}/a.txt", b"abc", 1_700_000_300)
    put(alice, f"{folder}/b10.txt", b"b" * 5000, 1_700_000_100)
    put(alice, f"{folder}/c2.txt", b"c" * 100, 1_700_000_200)
    put(alice, f"{folder}/sub/deep/needle.txt", b"found me")
    reload(browser, folder)
    wait_for(browser, lambda d: names(d) == ["sub", "a.txt", "b10.txt", "c2.txt"], "sorted by name")

    def sort(column: str, expected: list[str], order: str) -> None:
        browser.find_element(By.CSS_SELECTOR, f'#entries th[data-sort="{column}"] button').click()
        assert names(browser) == expected
        assert (
            browser.find_element(By.CSS_SELECTOR, f'th[data-sort="{column}"]').get_attribute("aria-sort")
            == order
        )

    sort("name", ["sub", "c2.txt", "b10.txt", "a.txt"], "descending")  # second click on the sorted column
    sort("size", ["sub", "a.txt", "c2.txt", "b10.txt"], "ascending")
    sort("size", ["sub", "b10.txt", "c2.txt", "a.txt"], "descending")
    sort("mtime", ["sub", "b10.txt", "c2.txt", "a.txt"], "ascending")
    sort("name", ["sub", "a.txt", "b10.txt", "c2.txt"], "ascending")

    search = browser.find_element(By.ID, "search")
    search.send_keys("C2")
    assert names(browser) == ["c2.txt"]
    search.clear()
    search.send_keys(" ")  # clear() fires no input event
    wait_for(browser, lambda d: len(names(d)) == 4, "all rows back")
    browser.find_element(By.ID, "search-deep").click()
    search.clear()
    search.send_keys("needle", Keys.ENTER)
    wait_for(browser, lambda d: names(d) == ["sub/deep/needle.txt"], "deep search found the nested file")
    assert "1 match" in browser.find_element(By.ID, "notice").text
    click(browser, "sub/deep/needle.txt", "a.open")
    wait_for(browser, lambda d: d.find_element(By.ID, "preview-text").text == "found me", "match previewed")
    browser.find_element(By.ID, "preview-close").click()
    browser.find_element(By.ID, "search-deep").click()
    search.clear()
    reload(browser, folder)


def test_drag_and_drop_files_and_folders(browser, alice, folder):
    texts = {"dropped-one.txt": "first dropped file\n", "dropped-two.md": "# second\n" * 50}
    browser.execute_script(
        """const dt = new DataTransfer();
        for (const [name, text] of Object.entries(arguments[0])) dt.items.add(new File([text], name));
        const zone = document.querySelector('#browser');
        for (const type of ['dragenter', 'dragover', 'drop'])
          zone.dispatchEvent(new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: dt}));""",
        texts,
    )
    for name in texts:
        row(browser, name)
    for name, text in texts.items():
        stored = stat(alice, f"{folder}/{name}").json()
        assert stored["size"] == len(text.encode())
        got = read(alice, f"{folder}/{name}").content
        assert got == text.encode()

    # A dropped folder as Chromium hands it over: entries read in batches until an empty one.
    browser.execute_script(
        """const file = (name, text) => ({isFile: true, isDirectory: false, name,
             file: (ok) => setTimeout(() => ok(new File([text], name)))});
        const dir = (name, batches) => ({isFile: false, isDirectory: true, name, createReader() {
             const left = [...batches, []];
             return {readEntries: (ok) => setTimeout(() => ok(left.shift()))}; }});
        const album = dir('album', [[file('one.txt', 'one'), file('two.txt', 'two')],
                                    [dir('inner', [[file('three.txt', 'three')]]), dir('empty', [])]]);
        const ev = new Event('drop', {bubbles: true, cancelable: true});
        Object.defineProperty(ev, 'dataTransfer', {value: {types: ['Files'], files: [],
          items: [{kind: 'file', webkitGetAsEntry: () => album, getAsFile: () => null}]}});
        document.querySelector('#browser').dispatchEvent(ev);"""
    )
    row(browser, "album")
    wait_for(
        browser,
        lambda d: d.find_element(By.ID, "upload-status").text == "uploaded 3 file(s)",
        "folder upload done",
    )
    for rel, text in {"one.txt": b"one", "two.txt": b"two", "inner/three.txt": b"three"}.items():
        got = read(alice, f"{folder}/album/{rel}")
        assert got.status_code == 200 and got.content == text, (rel, got.status_code)
    assert stat(alice, f"{folder}/album/empty").json()["type"] == "dir"


def test_upload_folder_picker(browser, alice, folder, tmp_path):
    picked = tmp_path / "picked"
    (picked / "nested" / "deeper").mkdir(parents=True)
    tree = {"top.txt": b"top", "nested/mid.txt": b"mid", "nested/deeper/low.bin": bytes(range(256)) * 8}
    for rel, data in tree.items():
        (picked / rel).write_bytes(data)
    browser.find_element(By.ID, "folder-input").send_keys(str(picked))
    wait_for(
        browser,
        lambda d: d.find_element(By.ID, "upload-status").text == "uploaded 3 file(s)",
        "folder uploaded",
    )
    row(browser, "picked")
    for rel, data in tree.items():
        got = read(alice, f"{folder}/picked/{rel}")
        assert got.status_code == 200 and got.content == data, (rel, got.status_code)


def test_multi_select_delete_move_and_zip(browser, alice, folder):
    files = {
        name: hashlib.sha256(name.encode()).digest() * 40 for name in ("a.bin", "b.bin", "c.bin", "d.bin")
    }
    for name, data in files.items():
        put(alice, f"{folder}/{name}", data)
    put(alice, f"{folder}/pack/inside.txt", b"inside the folder")
    reload(browser, folder)
    wait_for(browser, lambda d: names(d) == ["pack", "a.bin", "b.bin", "c.bin", "d.bin"], "listed")

    click(browser, "a.bin", "input.pick")
    ActionChains(browser).key_down(Keys.SHIFT).click(
        row(browser, "c.bin").find_element(By.CSS_SELECTOR, "input.pick")
    ).key_up(Keys.SHIFT).perform()  # a range: a, b, c
    click(browser, "b.bin", "input.pick")  # and b out again
    assert browser.find_element(By.ID, "bulk-count").text == "2 selected"
    screenshot(browser, "desktop_selected", DESKTOP)
    browser.find_element(By.ID, "bulk-delete").click()
    dialog_ok(browser)
    wait_for(browser, lambda d: names(d) == ["pack", "b.bin", "d.bin"], "a and c deleted")
    assert stat(alice, f"{folder}/a.bin").status_code == 404
    assert stat(alice, f"{folder}/c.bin").status_code == 404
    assert stat(alice, f"{folder}/b.bin").status_code == 200

    click(browser, "d.bin", "input.pick")
    browser.find_element(By.ID, "bulk-move").click()
    dialog_ok(browser, f"{folder}/moved/deeper")
    wait_for(browser, lambda d: names(d) == ["moved", "pack", "b.bin"], "d moved away")
    moved = read(alice, f"{folder}/moved/deeper/d.bin")
    assert moved.status_code == 200 and moved.content == files["d.bin"]
    assert stat(alice, f"{folder}/d.bin").status_code == 404

    browser.find_element(By.ID, "pick-all").click()
    assert browser.find_element(By.ID, "bulk-count").text == "3 selected"
    browser.find_element(By.ID, "bulk-zip").click()
    archive = zipfile.ZipFile(io.BytesIO(downloaded(browser.downloads, f"{folder[1:]}.zip")))
    assert archive.testzip() is None  # every CRC-32 matches
    assert sorted(archive.namelist()) == ["b.bin", "moved/deeper/d.bin", "pack/inside.txt"]
    assert archive.read("b.bin") == files["b.bin"]
    assert archive.read("moved/deeper/d.bin") == files["d.bin"]
    assert archive.read("pack/inside.txt") == b"inside the folder"
    browser.find_element(By.ID, "bulk-clear").click()
    assert browser.find_element(By.ID, "bulk").get_attribute("hidden") is not None


def test_preview_image_text_and_pdf(browser, alice, folder):
    image = png(40, 30, (200, 30, 30))
    long_text = "".join(f"line {i:06d} of a long log\n" for i in range(5000)).encode()  # 130 KB
    put(alice, f"{folder}/red.png", image)
    put(alice, f"{folder}/notes.log", long_text)
    put(alice, f"{folder}/doc.pdf", PDF)
    reload(browser, folder)

    click(browser, "red.png", "a.open")
    size = wait_for(
        browser,
        lambda d: d.execute_script(
            "const i = document.querySelector('#preview-image'); return i && i.complete && i.naturalWidth"
            " ? [i.naturalWidth, i.naturalHeight] : null"
        ),
        "image decoded",
    )
    assert size == [40, 30]
    screenshot(browser, "desktop_preview_image", DESKTOP)

    click(browser, "notes.log", "a.open")
    text = wait_for(
        browser,
        lambda d: d.find_elements(By.ID, "preview-text") and d.find_element(By.ID, "preview-text"),
        "text shown",
    )
    shown = text.get_attribute("textContent")
    assert shown.startswith("line 000000 of a long log\n")
    body, _, tail = shown.partition("\n… (first 64.0 KiB")
    assert tail and long_text.startswith(body.encode()) and len(body.encode()) == 64 * 1024
    screenshot(browser, "desktop_preview_text", DESKTOP)

    click(browser, "doc.pdf", "a.open")
    wait_for(browser, lambda d: d.find_elements(By.ID, "preview-pdf"), "pdf frame")
    blob = browser.execute_async_script(
        "const done = arguments[0]; fetch(document.querySelector('#preview-pdf').src)"
        ".then((r) => r.blob()).then(async (b) => done([b.type, [...new Uint8Array(await b.arrayBuffer())]]))"
    )
    assert blob[0] == "application/pdf" and bytes(blob[1]) == PDF
    browser.find_element(By.ID, "preview-close").click()
    assert browser.find_element(By.ID, "preview").get_attribute("hidden") is not None


@pytest.mark.parametrize("width", [390, 360])
def test_phone_width_fits_without_sideways_scroll(browser, alice, folder, width):
    put(alice, f"{folder}/" + "a-rather-long-file-name-without-any-spaces-at-all-to-wrap.txt", b"x" * 1234)
    put(alice, f"{folder}/photo.png", png(300, 200, (30, 90, 200)))
    put(alice, f"{folder}/folder-with-a-long-name/inner.txt", b"y")
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 844, "deviceScaleFactor": 1, "mobile": True},
    )
    reload(browser, folder)
    row(browser, "photo.png")
    assert browser.execute_script("return innerWidth") == width

    def fits() -> None:
        scroll, inner = browser.execute_script("return [document.scrollingElement.scrollWidth, innerWidth]")
        assert scroll <= inner, f"sideways scroll at {width} px: {scroll} > {inner}"
        lines = browser.execute_script(
            "return [...document.querySelectorAll('#entries td.date')].map((td) =>"
            " [getComputedStyle(td.querySelector('.long')).display, td.querySelector('.short').getClientRects().length])"
        )
        assert lines and all(shown == ["none", 1] for shown in lines), lines  # short date, one line

    fits()
    click(browser, "photo.png", "input.pick")
    screenshot(browser, f"phone_{width}_list", width)
    click(browser, "photo.png", "a.open")
    wait_for(
        browser,
        lambda d: d.execute_script(
            "const i = document.querySelector('#preview-image'); return i && i.complete && i.naturalWidth"
        ),
        "image",
    )
    fits()
    screenshot(browser, f"phone_{width}_preview", width)
    browser.find_element(By.ID, "preview-close").click()
    click(browser, "photo.png", "input.pick")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
