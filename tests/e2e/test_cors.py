"""CORS: a browser app on another origin may call the REST API with the key in a header."""

from __future__ import annotations

import requests

ORIGIN = "http://web.example"


def test_preflight_allows_the_key_headers(deployment):
    answer = requests.options(
        f"{deployment.api_url}/v1/files",
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Headers": "authorization,x-hycloud-sha256,content-type",
        },
        timeout=30,
    )
    assert answer.status_code in (200, 204)
    assert answer.headers["Access-Control-Allow-Origin"] in ("*", ORIGIN)
    allowed = {h.strip().lower() for h in answer.headers["Access-Control-Allow-Headers"].split(",")}
    assert {"authorization", "x-api-key", "x-hycloud-sha256", "content-type"} <= allowed
    assert "PUT" in answer.headers["Access-Control-Allow-Methods"]


def test_answers_and_errors_carry_the_cors_header(alice):
    ok = alice.api().call("GET", "/v1/whoami", headers={"Origin": ORIGIN})
    assert ok.status_code == 200 and ok.headers["Access-Control-Allow-Origin"] in ("*", ORIGIN)
    assert "x-hycloud-sha256" in ok.headers["Access-Control-Expose-Headers"]
    refused = requests.get(f"{alice.deployment.api_url}/v1/whoami", headers={"Origin": ORIGIN}, timeout=30)
    assert refused.status_code == 401 and refused.headers["Access-Control-Allow-Origin"] in ("*", ORIGIN)


def test_presigned_part_urls_accept_browser_uploads(alice, deployment):
    """The content bucket lets a browser PUT parts and GET files from presigned URLs."""
    s3 = deployment.client("s3")
    rules = s3.get_bucket_cors(Bucket=deployment.outputs["BucketName"])["CORSRules"]
    assert any({"PUT", "GET"} <= set(r["AllowedMethods"]) and "*" in r["AllowedOrigins"] for r in rules)
