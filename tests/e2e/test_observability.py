"""Logs and metrics of the deployed functions, read back from CloudWatch Logs in the local cloud.

The local Lambda executor posts each invocation's output to LocalStack, which stores it in
`/aws/lambda/<name>` (it ignores the function's logging config, which on AWS names the stack's own
group); the tests read it through the Logs API.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

pytestmark = pytest.mark.e2e
MiB = 1024 * 1024


def log_lines(deployment, function_name: str, since_ms: int, want, timeout_s: float = 20.0) -> list[dict]:
    """JSON lines of a function's log group since `since_ms`, polled until `want(lines)` holds."""
    logs = deployment.client("logs")
    group = f"/aws/lambda/{function_name}"
    deadline = time.monotonic() + timeout_s
    while True:
        lines = []
        kwargs = {"logGroupName": group, "startTime": since_ms}
        try:
            for page in logs.get_paginator("filter_log_events").paginate(**kwargs):
                for event in page["events"]:
                    lines += [parsed for text in event["message"].splitlines() if (parsed := _json(text))]
        except logs.exceptions.ResourceNotFoundException:
            pass
        if want(lines) or time.monotonic() > deadline:
            return lines
        time.sleep(0.5)


def _json(text: str) -> dict | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def emf(lines: list[dict], metric: str) -> list[dict]:
    """Embedded-metric-format lines in the HyCloud namespace that carry `metric`."""
    found = []
    for line in lines:
        for directive in line.get("_aws", {}).get("CloudWatchMetrics", []):
            names = {m["Name"] for m in directive["Metrics"]}
            if directive["Namespace"] == "HyCloud" and metric in names:
                found.append(line)
    return found


def value(line: dict, metric: str) -> float:
    """A metric's one value in an EMF line (a list of values when several were recorded)."""
    values = line[metric] if isinstance(line[metric], list) else [line[metric]]
    assert len(values) == 1, line
    return values[0]


def now_ms() -> int:
    return int(time.time() * 1000) - 1000


def test_controller_logs_each_request_as_json_with_correlation_id_user_route_and_status(deployment, alice):
    since, correlation_id = now_ms(), f"e2e-{uuid.uuid4()}"
    answer = alice.api().call(
        "GET",
        "/v1/stat",
        params={"path": f"/missing-{correlation_id}"},
        headers={"X-Correlation-Id": correlation_id},
    )
    assert answer.status_code == 404
    assert answer.headers["X-Correlation-Id"] == correlation_id

    def mine(lines):
        return [line for line in lines if line.get("correlation_id") == correlation_id]

    lines = mine(log_lines(deployment, deployment.outputs["ControllerFunctionName"], since, mine))
    done = [line for line in lines if line.get("message") == "request"]
    assert len(done) == 1, lines
    assert done[0]["user"] == alice.id
    assert done[0]["route"] == "GET /v1/stat"
    assert done[0]["status"] == 404
    assert done[0]["service"] == "hycloud-controller" and done[0]["level"] == "INFO"


def test_correlation_id_defaults_to_the_api_request_id(deployment, alice):
    answer = alice.api().call("GET", "/v1/whoami")
    assert answer.status_code == 200
    assert answer.headers.get("X-Correlation-Id")  # API Gateway's request id, to quote in a report


def test_request_metric_is_published_as_emf_by_route_and_status(deployment, alice):
    since, correlation_id = now_ms(), f"e2e-{uuid.uuid4()}"
    answer = alice.api().call("GET", "/v1/whoami", headers={"X-Correlation-Id": correlation_id})
    assert answer.status_code == 200

    def mine(lines):
        return [line for line in emf(lines, "Requests") if line.get("correlation_id") == correlation_id]

    found = mine(log_lines(deployment, deployment.outputs["ControllerFunctionName"], since, mine))
    assert len(found) == 1
    line = found[0]
    assert value(line, "Requests") == 1 and line["route"] == "GET /v1/whoami" and line["status"] == "200"
    dimensions = line["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0]
    assert {"route", "status", "service"} <= set(dimensions)


def function_named(deployment, part: str) -> str:
    """The one deployed function whose name holds `part` (CDK makes up the rest of each name)."""
    names = [
        fn["FunctionName"]
        for page in deployment.client("lambda").get_paginator("list_functions").paginate()
        for fn in page["Functions"]
        if part in fn["FunctionName"]
    ]
    assert len(names) == 1, names
    return names[0]


def test_relay_job_publishes_bytes_relayed_and_its_duration(deployment, alice, tmp_path):
    size = 3 * MiB + int.from_bytes(os.urandom(2), "big")  # a size no other test relays
    data = os.urandom(size)
    (tmp_path / "m.bin").write_bytes(data)
    alice.cli("put", str(tmp_path / "m.bin"), "/metrics.bin")
    since = now_ms()
    alice.cli("get", "--via", "relay", "/metrics.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == data

    def mine(lines):
        return [line for line in emf(lines, "BytesRelayed") if value(line, "BytesRelayed") == size]

    found = mine(log_lines(deployment, function_named(deployment, "RelayFetch"), since, mine))
    assert len(found) == 1
    assert found[0]["job"] == "relay" and 0 < value(found[0], "JobDuration") < 900_000
    units = {m["Name"]: m["Unit"] for m in found[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert units["BytesRelayed"] == "Bytes" and units["JobDuration"] == "Milliseconds"


@pytest.mark.exclusive
def test_delta_job_publishes_the_bytes_it_did_not_send(deployment, alice, tmp_path):
    v1 = os.urandom(3 * MiB + int.from_bytes(os.urandom(2), "big"))
    v2 = v1[:1000] + b"changed" + v1[1007:]
    (tmp_path / "v1").write_bytes(v1)
    (tmp_path / "v2").write_bytes(v2)
    alice.cli("put", str(tmp_path / "v1"), "/saved.bin")
    alice.cli("get", "/saved.bin", str(tmp_path / "local"))
    alice.cli("put", str(tmp_path / "v2"), "/saved.bin")
    since = now_ms()
    out = json.loads(
        alice.cli("--json", "get", "--via", "delta", "/saved.bin", str(tmp_path / "local")).stdout
    )
    assert (tmp_path / "local").read_bytes() == v2

    saved = len(v2) - out["received_bytes"]  # v2's size is this test's own: so is this figure

    def mine(lines):
        # other delta jobs log here too: other tests' beside this one, and under load the one the
        # commit of v2 started, at the default level, where the client asked for its own
        return [
            line
            for line in emf(lines, "DeltaSavedBytes")
            if line.get("job") == "delta-encode" and value(line, "DeltaSavedBytes") == saved
        ]

    found = mine(log_lines(deployment, function_named(deployment, "-Delta"), since, mine))
    assert found, f"no delta-encode line published {saved} saved bytes"
    assert saved > 0.99 * len(v2) and 0 < value(found[0], "JobDuration") < 900_000
