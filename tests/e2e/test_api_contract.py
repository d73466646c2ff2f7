"""The OpenAPI document against the deployment: schemathesis generates requests from it and every
response must be a non-5xx that conforms to the document (status, content type, schema)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "functions" / "controller" / "openapi.yaml"
MIN_REQUESTS = 1000


def test_schemathesis_finds_no_5xx_and_no_contract_break(deployment, tmp_path):
    from tests.e2e.conftest import _make_user

    user = _make_user(deployment, "fuzz")  # a namespace of its own: generated writes land there only
    har = tmp_path / "requests.har"
    cmd = [
        str(Path(sys.executable).parent / "schemathesis"),
        "run",
        str(SPEC),
        "--url",
        deployment.api_url,
        "-H",
        f"Authorization: Bearer {user.key}",
        "--checks",
        "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
        "--max-examples",
        "90",
        "--generation-deterministic",
        "--request-timeout",
        "30",
        "--report",
        "har",
        "--report-har-path",
        str(har),
        "--continue-on-failure",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
    output = result.stdout[-6000:] + result.stderr[-2000:]
    requests_made = len(json.loads(har.read_text())["log"]["entries"])
    assert result.returncode == 0, output
    assert requests_made >= MIN_REQUESTS, f"only {requests_made} requests\n{output}"
