"""Exit codes scripts can rely on (one per error class, like pip's status_codes).

0 success; 1 any other error; 2 usage (bad arguments or options, a request the API calls bad);
3 not configured, or the configuration is unreadable; 4 the key is refused; 5 no such remote path;
6 conflict (exists, not empty, busy); 7 the API cannot be reached; 8 a local file or directory
cannot be read or written (missing, unreadable, disk full); 9 content did not verify (a corrupt
download or delta, or the server reports storing other content than was sent); 10 the API did not
answer a change in time, so it may or may not have happened; 11 the user's quota (bytes or files)
has no room for the change; 12 partial: a tree transfer sent some files and refused or failed
others (each named on stderr); 130 interrupted (Ctrl-C), resumable.
"""

SUCCESS = 0
ERROR = 1
USAGE = 2
NOT_CONFIGURED = 3
AUTH = 4
NOT_FOUND = 5
CONFLICT = 6
UNREACHABLE = 7
LOCAL_IO = 8
CORRUPT = 9
OUTCOME_UNKNOWN = 10
QUOTA_EXCEEDED = 11
PARTIAL = 12
INTERRUPTED = 130

BY_STATUS = {400: USAGE, 401: AUTH, 403: AUTH, 404: NOT_FOUND, 409: CONFLICT, 413: USAGE, 503: UNREACHABLE}
BY_CODE = {
    "not-configured": NOT_CONFIGURED,
    "bad-config": NOT_CONFIGURED,
    "unreachable": UNREACHABLE,
    "local-io": LOCAL_IO,
    "corrupt-download": CORRUPT,
    "delta-error": CORRUPT,
    "bad-delta": CORRUPT,
    "delta-mismatch": CORRUPT,
    "stored-mismatch": CORRUPT,
    "outcome-unknown": OUTCOME_UNKNOWN,
    "quota-exceeded": QUOTA_EXCEEDED,  # a 403, but the key is fine: room is what is missing
    # a job's failure carries no HTTP status: the conflicts it reports exit as conflicts
    "version-mismatch": CONFLICT,
    "base-unknown": CONFLICT,
    "busy": CONFLICT,
}


def for_error(code: str, status: int) -> int:
    """The exit code of a HyCloudError: by its code first, then by its HTTP status."""
    return BY_CODE.get(code) or BY_STATUS.get(status, ERROR)
