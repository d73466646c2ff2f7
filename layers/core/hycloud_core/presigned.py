"""How long the cloud's presigned S3 URLs live, and how S3 says that one has lived too long.

A presigned URL is only as good as the credentials that signed it. The cloud's functions sign
with their execution role's temporary (session) credentials, and S3 documents that such a URL
"expires when the role session expires, even if you specify a longer expiration time" (S3 User
Guide, "Download and upload objects with presigned URLs", expiration). Lambda refreshes those
credentials on its own schedule and tells the function neither when nor how long they have left;
AWS notes that services assuming a role, "such as the AWS Lambda execution role, don't
necessarily comply with the role's session duration settings" (Knowledge Center, "Why is my
presigned URL for an Amazon S3 bucket expiring before the expiration time that I specified?").

The shortest role session STS issues is 900 s (AssumeRole `DurationSeconds`: 900 s up to the
role's maximum), so no URL is signed for longer than `MAX_URL_TTL_S`: a longer life is a promise
the signing credentials are the least able to keep, and one a client would lean on. Nothing
guarantees even that much (credentials may be near their end when a URL is signed), so clients
do not trust a URL's stated life: when S3 refuses one as expired (`expired`), they ask the API
for fresh URLs for the pieces not yet done and go on (client/hycloud/transfer/renew.py).
"""

from __future__ import annotations

import re

MAX_URL_TTL_S = 900

# S3's refusals of a presigned request that is past its time: the URL's own X-Amz-Expires
# (403 AccessDenied "Request has expired"), or the session token that signed it
# (400 ExpiredToken "The provided token has expired.").
_CODE = re.compile(rb"<Code>\s*([A-Za-z]+)\s*</Code>")
_MESSAGE = re.compile(rb"<Message>([^<]*)</Message>")


def expired(status: int, body: bytes) -> bool:
    """Whether S3 refused a presigned request because the URL (or what signed it) expired, not
    for any other reason (a bad signature, a missing key, a checksum mismatch)."""
    if status not in (400, 403):
        return False
    code = _CODE.search(body or b"")
    if code is None:
        return False
    if code.group(1) == b"ExpiredToken":
        return True
    message = _MESSAGE.search(body)
    return (
        code.group(1) == b"AccessDenied"
        and message is not None
        and b"request has expired" in message.group(1).lower()
    )
