"""The coded upload's URL pages: every block's URL once, in block order, the next page asked while
the caller still holds the one before (so sending starts with the first page)."""

from __future__ import annotations

import threading

from hycloud.transfer import coded


class PagedHttp:
    """Answers `POST /v1/coded/uploads/urls` with a URL per block; block 3 is stored already."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []
        self.second_asked = threading.Event()

    def json(self, method: str, path: str, json: dict) -> dict:
        assert (method, path) == ("POST", "/v1/coded/uploads/urls")
        hashes = [b["hash"] for b in json["blocks"]]
        self.asked.append(hashes)
        if len(self.asked) == 2:
            self.second_asked.set()
        return {"urls": [None if h == "h3" else f"url-{h}" for h in hashes]}


def started(blocks: int, first_page: int) -> dict:
    chunk = {"blocks": [{"instance": "i1", "hash": f"h{b}", "size": 10} for b in range(blocks)]}
    return {
        "layout": {"chunks": [chunk]},
        "urls": {f"0/{b}": f"url-h{b}" for b in range(first_page)},
        "more": first_page,
    }


def test_pages_cover_every_block_once_and_the_next_is_asked_ahead(monkeypatch):
    monkeypatch.setattr(coded, "URL_PAGE", 2)
    http = PagedHttp()
    pages = coded.url_pages(http, started(7, 2), "c" * 64)
    first = next(pages)
    assert first == {"0/0": "url-h0", "0/1": "url-h1"}
    second = next(pages)  # blocks 2-3; block 4-5 is asked while the caller sends these
    assert second == {"0/2": "url-h2"}  # h3 is stored: no URL
    assert http.second_asked.wait(5)
    rest = list(pages)
    assert rest == [{"0/4": "url-h4", "0/5": "url-h5"}, {"0/6": "url-h6"}]
    assert http.asked == [["h2", "h3"], ["h4", "h5"], ["h6"]]


def test_a_start_that_held_every_url_asks_nothing(monkeypatch):
    http = PagedHttp()
    whole = {**started(3, 3), "more": None}
    assert list(coded.url_pages(http, whole, "c" * 64)) == [
        {"0/0": "url-h0", "0/1": "url-h1", "0/2": "url-h2"}
    ]
    assert http.asked == []
