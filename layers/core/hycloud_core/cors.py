"""What browsers on other origins (the web app) may send to and read from the REST API.

Shared by the API Gateway preflight (infra) and the controller's own CORS headers, so the two
never disagree. Any origin is allowed: the API key travels in a header, never in a cookie.
"""

ALLOW_HEADERS = (
    "Authorization",
    "Content-Type",
    "x-api-key",
    "x-hycloud-sha256",
    "Idempotency-Key",
    "If-Match",
    "If-None-Match",
)
EXPOSE_HEADERS = ("x-hycloud-sha256", "Content-Disposition", "Location", "X-Correlation-Id")
MAX_AGE_S = 600
