"""Exit codes scripts can rely on (one per error class, like pip's status_codes)."""

SUCCESS = 0
ERROR = 1
USAGE = 2
NOT_CONFIGURED = 3
AUTH = 4
NOT_FOUND = 5
CONFLICT = 6
UNREACHABLE = 7
INTERRUPTED = 130

BY_STATUS = {400: USAGE, 401: AUTH, 403: AUTH, 404: NOT_FOUND, 409: CONFLICT, 413: USAGE, 503: UNREACHABLE}
BY_CODE = {"not-configured": NOT_CONFIGURED, "unreachable": UNREACHABLE}
