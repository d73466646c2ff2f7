"""The function-side runtime against a fake LocalStack endpoint: the executor protocol, no LocalStack needed."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

BOOTSTRAP = (
    Path(__file__).resolve().parents[3] / "infra/local/lambda_executor/hycloud_local_lambda/bootstrap.py"
)

HANDLER = """
import decimal, json, logging, os, sys
import greeting

def handler(event, context):
    if event.get("fail"):
        raise KeyError("missing")
    print("to stdout")
    print("to stderr", file=sys.stderr)
    logging.getLogger().warning("a warning")
    return {"greeting": greeting.TEXT, "n": decimal.Decimal("3"), "x": decimal.Decimal("0.5"),
            "request_id": context.aws_request_id, "memory": context.memory_limit_in_mb,
            "cwd_files": sorted(os.listdir(os.environ["LAMBDA_TASK_ROOT"]))}
"""


class FakeEndpoint:
    """Records what the runtime posts to ``/_localstack_lambda/<id>/...``."""

    def __init__(self):
        self.posts: queue.Queue = queue.Queue()
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                posts.put((self.path, json.loads(body)))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/_localstack_lambda/env1"

    def next(self) -> tuple[str, dict]:
        return self.posts.get(timeout=10)


@pytest.fixture
def runtime(tmp_path):
    def start(handler_code: str, handler: str = "app.handler"):
        code, layer1, layer2 = tmp_path / "code", tmp_path / "l1", tmp_path / "l2"
        (code).mkdir()
        (code / "app.py").write_text(handler_code)
        for layer, text in ((layer1, "TEXT = 'old'\n"), (layer2, "TEXT = 'from layer 2'\n")):
            (layer / "python").mkdir(parents=True)
            (layer / "python" / "greeting.py").write_text(text)
        endpoint = FakeEndpoint()
        env = {
            "PATH": os.environ["PATH"],
            "LOCALSTACK_RUNTIME_ENDPOINT": endpoint.url,
            "LOCALSTACK_RUNTIME_ID": "rt1",
            "LAMBDA_TASK_ROOT": str(code),
            "_HANDLER": handler,
            "PYTHONDONTWRITEBYTECODE": "1",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
            "AWS_LAMBDA_FUNCTION_TIMEOUT": "5",
            "HYCLOUD_LAMBDA_LAYERS": json.dumps([str(layer1), str(layer2)]),
        }
        proc = subprocess.Popen([sys.executable, str(BOOTSTRAP)], env=env, cwd=code)
        procs.append(proc)
        return endpoint

    procs: list[subprocess.Popen] = []
    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def invoke(port: int, invoke_id: str, payload: dict) -> None:
    body = json.dumps(
        {"invoke-id": invoke_id, "invoked-function-arn": "arn:x", "payload": json.dumps(payload)}
    )
    req = urllib.request.Request(f"http://127.0.0.1:{port}/invoke", data=body.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


def test_ready_invoke_response_and_logs(runtime):
    endpoint = runtime(HANDLER)
    path, ready = endpoint.next()
    assert path == "/_localstack_lambda/env1/status/rt1/ready"
    invoke(ready["port"], "req-1", {})
    path, logs = endpoint.next()
    assert path == "/_localstack_lambda/env1/invocations/req-1/logs"
    lines = logs["logs"].splitlines()
    assert lines[0] == "START RequestId: req-1 Version: $LATEST"
    assert {"to stdout", "to stderr"} <= set(lines)
    assert any(line.startswith("[WARNING]\t") and line.endswith("\treq-1\ta warning") for line in lines)
    assert lines[-2] == "END RequestId: req-1" and lines[-1].startswith("REPORT RequestId: req-1\t")
    path, response = endpoint.next()
    assert path == "/_localstack_lambda/env1/invocations/req-1/response"
    # the later layer wins, as when layers are extracted into /opt in order
    assert response == {
        "greeting": "from layer 2",
        "n": 3,
        "x": 0.5,
        "request_id": "req-1",
        "memory": 256,
        "cwd_files": ["app.py"],
    }


def test_handler_exception_becomes_error(runtime):
    endpoint = runtime(HANDLER)
    _, ready = endpoint.next()
    invoke(ready["port"], "req-2", {"fail": True})
    assert endpoint.next()[0].endswith("/invocations/req-2/logs")
    path, error = endpoint.next()
    assert path.endswith("/invocations/req-2/error")
    assert (error["errorType"], error["errorMessage"], error["requestId"]) == (
        "KeyError",
        "'missing'",
        "req-2",
    )
    assert any("in handler" in frame for frame in error["stackTrace"])


@pytest.mark.parametrize(
    ("code", "handler", "error_type"),
    [
        ("import no_such_module\n", "app.handler", "Runtime.ImportModuleError"),
        ("def other(e, c):\n    pass\n", "app.handler", "Runtime.HandlerNotFound"),
        ("def handler(e, c)\n", "app.handler", "Runtime.UserCodeSyntaxError"),
        ("raise RuntimeError('init failed')\n", "app.handler", "RuntimeError"),
    ],
)
def test_init_errors(runtime, code, handler, error_type):
    endpoint = runtime(code, handler)
    path, error = endpoint.next()
    assert path == "/_localstack_lambda/env1/status/rt1/error"
    assert error["errorType"] == error_type


IMPORT_TIME_HANDLER = """
import logging, sys

log = logging.getLogger("made-at-import")
log.addHandler(logging.StreamHandler(sys.stdout))  # as Powertools' Logger does when imported
log.propagate = False

def handler(event, context):
    log.warning("through a handler made at import, call %s", event["n"])
    return {}
"""


def test_log_handlers_made_at_import_reach_each_invocations_logs(runtime):
    endpoint = runtime(IMPORT_TIME_HANDLER)
    _, ready = endpoint.next()
    for n in (1, 2):
        invoke(ready["port"], f"req-{n}", {"n": n})
        path, logs = endpoint.next()
        assert path.endswith(f"/invocations/req-{n}/logs")
        assert f"through a handler made at import, call {n}" in logs["logs"].splitlines()
        assert f"call {3 - n}" not in logs["logs"]  # only this invocation's lines
        assert endpoint.next()[0].endswith(f"/invocations/req-{n}/response")
