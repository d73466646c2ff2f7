"""Retries of presigned transfers (transfer/retry.py): which answers and errors are tried again,
how often, and how long the client waits between tries."""

from __future__ import annotations

import random

import pytest
import requests

from hycloud.transfer import coded, download, upload
from hycloud.transfer.config import TransferConfig
from hycloud.transfer.progress import Progress
from hycloud.transfer.renew import UrlBook
from hycloud.transfer.retry import Refused, retryable_error, retryable_status, send_presigned, with_retries
from hycloud_core import content
from hycloud_core.errors import ConflictError, HyCloudError, NotFoundError

NO_WAIT = TransferConfig(backoff_s=0.0)


class Answer:
    """A response of S3 as far as the transfer code reads one."""

    def __init__(self, status: int, body: bytes = b"") -> None:
        self.status_code, self.content, self.text, self.closed = (
            status,
            body,
            body.decode(errors="replace"),
            False,
        )

    def close(self) -> None:
        self.closed = True


class Session:
    """Answers each request with the next of `script` (an Answer, or an exception to raise)."""

    def __init__(self, *script: Answer | Exception) -> None:
        self.script, self.calls = list(script), 0

    def _next(self, *_: object, **__: object) -> Answer:
        self.calls += 1
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, Exception):
            raise step
        return step

    put = get = _next


# --- the rule --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "again"),
    [(500, True), (502, True), (503, True), (504, True), (408, True), (429, True)]
    + [(400, False), (401, False), (403, False), (404, False), (409, False), (412, False), (200, False)],
)
def test_only_server_errors_timeouts_and_throttling_are_sent_again(status, again):
    assert retryable_status(status) is again


@pytest.mark.parametrize(
    ("error", "again"),
    [
        (requests.ConnectionError("reset"), True),
        (requests.Timeout("slow"), True),
        (HyCloudError("boom"), True),  # a 500
        (HyCloudError("busy", status=503, code="unreachable"), True),
        (HyCloudError("slow down", status=429), True),
        (Refused(503), True),
        (Refused(None), True),  # no URL given: as a failed download always was, tried again
        (Refused(404), False),  # S3 has no such object: no use asking again
        (Refused(403), False),
        (NotFoundError("gone"), False),
        (ConflictError("changed", code="changed-while-open"), False),
        (HyCloudError("expired", code="url-expired"), False),
        (ValueError("a bug"), False),
    ],
)
def test_which_errors_are_tried_again(error, again):
    assert retryable_error(error) is again


def test_a_refusal_keeps_the_status_a_failed_download_always_had():
    """The exit code a user sees (by status) does not change with S3's answer."""
    err = Refused(404)
    assert (err.code, err.status, err.answered) == ("download-failed", 500, 404)


# --- attempts and backoff --------------------------------------------------------------------
def test_a_5xx_is_sent_again_until_it_succeeds_waiting_longer_each_time():
    waits: list[float] = []
    session = Session(Answer(503), Answer(500), Answer(200, b"ok"))
    config = TransferConfig(backoff_s=0.1, jitter=0.0)
    got = with_retries(
        session.get, config, retry_answer=lambda r: retryable_status(r.status_code), sleep=waits.append
    )
    assert got.content == b"ok" and session.calls == 3
    assert waits == [0.1, 0.2]


def test_attempts_bound_the_tries_and_the_last_answer_is_returned():
    waits: list[float] = []
    session = Session(Answer(503))
    config = TransferConfig(attempts=5, backoff_s=1.0, backoff_max_s=3.0, jitter=0.0)
    got = with_retries(
        session.get, config, retry_answer=lambda r: retryable_status(r.status_code), sleep=waits.append
    )
    assert got.status_code == 503 and session.calls == 5
    assert waits == [1.0, 2.0, 3.0, 3.0]  # doubled, then capped


def test_answers_given_up_on_are_closed_and_the_last_is_not():
    first, last = Answer(500), Answer(500)
    session = Session(first, last)
    got = send_presigned(session.get, TransferConfig(attempts=2, backoff_s=0.0))
    assert got is last and first.closed and not last.closed


def test_a_4xx_other_than_408_or_429_is_never_sent_again():
    session = Session(Answer(404), Answer(200))
    assert send_presigned(session.get, NO_WAIT).status_code == 404 and session.calls == 1


def test_a_dropped_connection_is_tried_again_then_raised_after_the_last_attempt():
    session = Session(requests.ConnectionError("reset"))
    with pytest.raises(requests.ConnectionError):
        send_presigned(session.get, TransferConfig(attempts=3, backoff_s=0.0))
    assert session.calls == 3


def test_an_error_not_worth_a_retry_is_raised_at_once():
    session = Session(ValueError("a bug"), Answer(200))
    with pytest.raises(ValueError):
        send_presigned(session.get, NO_WAIT)
    assert session.calls == 1


def test_jitter_cuts_each_wait_by_at_most_its_share():
    config = TransferConfig(backoff_s=1.0, backoff_max_s=100.0, jitter=0.5)
    rng = random.Random(7)
    waits = [config.backoff(2, rng) for _ in range(200)]
    assert all(2.0 <= w <= 4.0 for w in waits) and len(set(waits)) > 100


def test_on_retry_hears_each_retry():
    heard: list[int] = []
    session = Session(Answer(500), Answer(500), Answer(200))
    with_retries(
        session.get,
        NO_WAIT,
        retry_answer=lambda r: r.status_code >= 500,
        on_retry=heard.append,
        sleep=lambda _: None,
    )
    assert heard == [0, 1]


# --- every presigned transfer uses it ----------------------------------------------------------
def test_an_upload_part_is_sent_again_after_a_5xx_and_not_after_a_refusal(tmp_path):
    again = Session(Answer(500), Answer(200))
    r = upload._put(again, "http://s3/part", b"data", b"\0" * 32, NO_WAIT)  # type: ignore[arg-type]
    assert r.status_code == 200 and again.calls == 2
    refused = Session(Answer(400, b"<Error><Code>BadDigest</Code></Error>"), Answer(200))
    book = UrlBook({"1": "http://s3/part"}, None)
    with pytest.raises(HyCloudError) as err:
        upload._put_part(refused, book, 1, b"data", b"\0" * 32, NO_WAIT)  # type: ignore[arg-type]
    assert err.value.code == "part-upload-failed" and refused.calls == 1


def test_an_upload_part_is_tried_config_attempts_times():
    down = Session(Answer(503))
    r = upload._put(down, "http://s3/part", b"data", b"\0" * 32, TransferConfig(attempts=6, backoff_s=0.0))  # type: ignore[arg-type]
    assert r.status_code == 503 and down.calls == 6


def test_a_coded_block_is_tried_block_attempts_times():
    down = Session(Answer(500))
    config = TransferConfig(attempts=9, block_attempts=3, backoff_s=0.0)
    r = coded._put(down, "http://s3/block", b"data", "c2hh", config)  # type: ignore[arg-type]
    assert r.status_code == 500 and down.calls == 3


def _direct(tmp_path, monkeypatch, *script: Answer | Exception, data: bytes = b"x" * 10) -> Session:
    session = Session(*script)
    monkeypatch.setattr(download, "new_session", lambda: session)
    info = {"url": "http://s3/obj", "size": len(data), "content_hash": content.hash_bytes(data)}
    download.download_large(info, tmp_path / "out", Progress(), config=TransferConfig(backoff_s=0.0))
    return session


def test_a_direct_download_piece_is_fetched_again_after_5xx_and_dropped_connections(tmp_path, monkeypatch):
    session = _direct(
        tmp_path, monkeypatch, Answer(503), requests.ConnectionError("reset"), Answer(206, b"x" * 10)
    )
    assert (tmp_path / "out").read_bytes() == b"x" * 10 and session.calls == 3


def test_a_direct_download_that_s3_refuses_fails_after_one_request(tmp_path, monkeypatch):
    session = Session(Answer(404, b"<Error><Code>NoSuchKey</Code></Error>"), Answer(206, b"x" * 10))
    monkeypatch.setattr(download, "new_session", lambda: session)
    info = {"url": "http://s3/obj", "size": 10, "content_hash": content.hash_bytes(b"x" * 10)}
    with pytest.raises(HyCloudError) as err:
        download.download_large(info, tmp_path / "out", config=NO_WAIT)
    assert err.value.code == "download-failed" and err.value.status == 500
    assert session.calls == 1 and not (tmp_path / "out").exists()


def test_a_direct_download_gives_up_after_config_attempts(tmp_path, monkeypatch):
    session = Session(Answer(500))
    monkeypatch.setattr(download, "new_session", lambda: session)
    info = {"url": "http://s3/obj", "size": 10, "content_hash": content.hash_bytes(b"x" * 10)}
    with pytest.raises(HyCloudError):
        download.download_large(info, tmp_path / "out", config=TransferConfig(attempts=2, backoff_s=0.0))
    assert session.calls == 2


def test_a_coded_fetch_reconnects_once_at_once_after_a_dropped_connection():
    """A kept-alive connection the instance closed: one new one, no wait, counted in the stats."""
    from urllib3.exceptions import ProtocolError

    dropped = requests.ConnectionError(ProtocolError("Connection aborted."))
    session = Session(dropped, Answer(200, b"block"))
    fetcher = coded.Fetcher.__new__(coded.Fetcher)
    fetcher.get = lambda r, url: session.get(url)  # type: ignore[assignment]
    fetcher.stats = {"i": coded.InstanceStats()}
    assert fetcher._get("i", "http://s3/b").content == b"block"
    assert session.calls == 2 and fetcher.stats["i"].retried == 1
    refused = Session(requests.ConnectTimeout("no answer"), Answer(200))
    fetcher.get = lambda r, url: refused.get(url)  # type: ignore[assignment]
    with pytest.raises(requests.ConnectTimeout):
        fetcher._get("i", "http://s3/b")
    assert refused.calls == 1  # a refusal or timeout is a sign of the instance: not tried again here


class _Link:
    headers = {"Content-Type": "application/vnd.hycloud.link+json"}

    def json(self) -> dict:
        return {"url": "http://s3/obj", "size": 10, "content_hash": content.hash_bytes(b"x" * 10)}


class _Client:
    def __init__(self, config: TransferConfig) -> None:
        self.transfer = config

    def _fetch(self, path: str) -> _Link:
        return _Link()


def test_a_ranged_read_of_an_open_file_is_sent_again_as_the_config_says():
    from hycloud.sdk.files import RemoteReader

    reader = RemoteReader(_Client(TransferConfig(attempts=3, backoff_s=0.0)), "/f")  # type: ignore[arg-type]
    reader._session = again = Session(Answer(502), Answer(503), Answer(206, b"xxxx"))  # type: ignore[assignment]
    assert reader.read_range(2, 4) == b"xxxx" and again.calls == 3
    reader._session = down = Session(Answer(500))  # type: ignore[assignment]
    with pytest.raises(HyCloudError):
        reader.read_range(0, 4)
    assert down.calls == 3


def test_a_coded_chunk_reader_tries_a_block_block_attempts_times_before_another_holder():
    reader = coded.ChunkReader.__new__(coded.ChunkReader)
    reader.config = TransferConfig(block_attempts=2, backoff_s=0.0)
    reader.session = down = Session(Answer(503), Answer(503), Answer(200))  # type: ignore[assignment]
    assert reader._get("http://s3/b").status_code == 503 and down.calls == 2
