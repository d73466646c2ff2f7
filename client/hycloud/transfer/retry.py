"""One way to try a presigned transfer again: exponential backoff with jitter, as often as
TransferConfig says.

What is worth another try: a dropped or timed-out connection, a 5xx, and of the 4xx only 408
(request timeout) and 429 (too many requests). Any other 4xx says the request itself is wrong (a
URL S3 refuses, a file that changed) and is never sent again here; an expired URL is renew.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import requests

from hycloud_core.errors import ConflictError, HyCloudError

from .config import TransferConfig

RETRIED_4XX = (408, 429)


def retryable_status(status: int) -> bool:
    """An answer worth sending the request again for."""
    return status >= 500 or status in RETRIED_4XX


class Refused(HyCloudError):
    """S3 answered a presigned request with no success: its status is `answered` (None: no URL to
    send it to); the error's own status stays the generic 500 a failed download always had."""

    def __init__(self, answered: int | None) -> None:
        super().__init__(f"S3 answered {answered}", code="download-failed")
        self.answered = answered


def retryable_error(err: BaseException) -> bool:
    """A failure worth another try: a connection's, or an error that is not the request's own
    fault (not a file that changed, not URLs S3 keeps refusing as expired, not another 4xx)."""
    if isinstance(err, requests.RequestException):
        return True
    if not isinstance(err, HyCloudError) or isinstance(err, ConflictError) or err.code == "url-expired":
        return False
    status = err.answered if isinstance(err, Refused) else err.status
    return status is None or retryable_status(status) or status < 400


def with_retries[T](
    send: Callable[[], T],
    config: TransferConfig,
    *,
    attempts: int | None = None,
    retry_error: Callable[[BaseException], bool] = retryable_error,
    retry_answer: Callable[[T], bool] | None = None,
    on_retry: Callable[[int], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """`send()` up to `attempts` (default config.attempts) times: again after an exception that
    `retry_error` accepts or an answer that `retry_answer` rejects, waiting config.backoff()
    between. The last try's answer is returned (or its exception raised) whatever it is."""
    tries = attempts or config.attempts
    for retry in range(tries):
        last = retry == tries - 1
        try:
            answer = send()
        except Exception as err:
            if last or not retry_error(err):
                raise
        else:
            if last or retry_answer is None or not retry_answer(answer):
                return answer
            close = getattr(answer, "close", None)
            if callable(close):
                close()  # its connection back to the pool
        if on_retry is not None:
            on_retry(retry)
        sleep(config.backoff(retry))
    raise AssertionError("unreachable: the last try returns or raises")


def send_presigned(
    send: Callable[[], requests.Response], config: TransferConfig, attempts: int | None = None
) -> requests.Response:
    """One presigned PUT or GET, sent again on a dropped connection, a 5xx, 408 or 429; S3's
    last answer."""
    return with_retries(
        send, config, attempts=attempts, retry_answer=lambda r: retryable_status(r.status_code)
    )
