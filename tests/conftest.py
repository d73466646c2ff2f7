"""Shared fixtures: load a function folder as Lambda would, and build API Gateway events."""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
FUNCTION_MODULES = (
    "handler",
    "context",
    "bodies",
    "preconditions",
    "polling",
    "routes",
    "services",
    "models",
    "answers",
    "validation",
    "idempotency",
    "small_files",
)
PHASES: dict[str, float] = {}  # seconds per phase of the run, printed at the end

# Property tests draw the same examples on every run, so a test run is reproducible and a red CI
# means a change broke something; HYPOTHESIS_PROFILE=explore searches anew (and may find more).
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


# Under pytest-xdist, a session that deploys the local cloud itself keeps every test that needs it
# on one worker, in order (one cloud, one deployment), while the other takes the unit and infra
# tests. When the cloud was deployed before the workers started (`make test`,
# infra/local/run_tests.py), the cloud tests spread over the workers module by module; the ones
# marked `exclusive` run afterwards, alone. Tests marked xdist_group stay together either way.
CLOUD_TESTS = ("tests/e2e/", "tests/localcloud/")
# The longest work units of the lanes (`make test`'s slowest modules), handed out first so the two
# workers finish together instead of one running a long module alone at the end. Order only.
LONGEST_FIRST = (
    "large-files",  # xdist_group of test_large_delta and test_large_coded_delta
    "tests/e2e/test_tree_jobs.py",
    "tests/e2e/test_schemathesis.py",
    "tests/e2e/test_sync_devices.py",
    "tests/e2e/test_webdav.py",
    "tests/e2e/test_geo.py",
    "tests/e2e/test_coded_scale.py",
    "tests/e2e/test_merkle.py",
    "tests/e2e/test_accounts.py",
)


# `make fast`'s end-to-end share: one quick module per main path a user takes (the API's basics and
# its refusals, the client's transfers direct and by relay, deltas, hashes and Merkle sync, a share
# kept private, concurrent writes kept). Its slow and exclusive tests stay out; `make test` runs all.
SMOKE = (
    "tests/e2e/test_foundation.py",
    "tests/e2e/test_sdk.py",
    "tests/e2e/test_malformed.py",
    "tests/e2e/test_presigned.py",
    "tests/e2e/test_sha256.py",
    "tests/e2e/test_relay.py",
    "tests/e2e/test_delta.py",
    "tests/e2e/test_merkle.py",
    "tests/e2e/test_share_isolation.py",
    "tests/e2e/test_versioned_writes.py",
)


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if item.nodeid.startswith(SMOKE):
            item.add_marker(pytest.mark.smoke)


def _serialize_moto() -> None:
    """One mocked AWS call at a time. moto's in-process backends are not thread-safe (its
    TransactWriteItems deep-copies a table another thread is writing: "dictionary changed size
    during iteration"), and the code under test calls AWS from thread pools, as it may on AWS."""
    import threading

    from moto.core.botocore_stubber import BotocoreStubber

    lock, original = threading.RLock(), BotocoreStubber.process_request

    def process_request(self, request):
        with lock:
            return original(self, request)

    BotocoreStubber.process_request = process_request  # type: ignore[method-assign]


_serialize_moto()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    from infra.local.deploy import DEPLOYED_ENV

    spread = bool(os.environ.get(DEPLOYED_ENV))

    class CloudTestsScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if "@" in nodeid:  # `--dist loadgroup` suffixes an xdist_group's tests with its name
                return nodeid.rsplit("@", 1)[-1]
            if not nodeid.startswith(CLOUD_TESTS):
                return nodeid
            return nodeid.split("::", 1)[0] if spread else "cloud"

        def _assign_work_unit(self, node) -> None:
            longest = next((scope for scope in LONGEST_FIRST if scope in self.workqueue), None)
            if longest is not None:
                self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

    return CloudTestsScheduling(config, log)


def pytest_unconfigure(config) -> None:
    if hasattr(config, "uring_switch"):
        config.uring_switch.close()


def pytest_configure(config) -> None:
    if not hasattr(config, "workerinput"):  # the controller, before its workers start
        from infra.local import uring_switch

        config.uring_switch = contextlib.ExitStack()
        config.uring_switch.enter_context(uring_switch.switched_on())
    # Started as a background job (`make test &`), the shell hands pytest SIGINT ignored; every CLI
    # a test spawns would inherit that and shrug off the Ctrl-C tests' SIGINT.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    from tests import moto_partitions

    moto_partitions.install()


def pytest_sessionfinish(session) -> None:
    if hasattr(session.config, "workeroutput"):  # an xdist worker: hand the phases to the controller
        session.config.workeroutput["phases"] = json.dumps(PHASES)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    PHASES.update(json.loads(getattr(node, "workeroutput", {}).get("phases", "{}")))


def pytest_terminal_summary(terminalreporter) -> None:
    if PHASES:
        terminalreporter.write_sep("-", "phases")
        for name, seconds in PHASES.items():
            terminalreporter.write_line(f"{name}: {seconds:.1f} s")


def load_function(name: str):
    """Import functions/<name>/handler.py fresh, the way the Lambda runtime does (its folder on sys.path)."""
    for mod in list(sys.modules):
        if mod.split(".")[0] in FUNCTION_MODULES:
            del sys.modules[mod]
    sys.path.insert(0, str(ROOT / "functions" / name))
    try:
        return importlib.import_module("handler")
    finally:
        sys.path.pop(0)


def api_event(
    method: str,
    path: str,
    *,
    query: dict | None = None,
    body: bytes | str | dict | None = None,
    headers: dict | None = None,
    binary: bool = False,
) -> dict:
    """An API Gateway REST (v1) proxy event as the controller receives it."""
    if isinstance(body, dict):
        body = json.dumps(body)
    encoded = False
    if isinstance(body, bytes):
        body, encoded = base64.b64encode(body).decode(), True
    elif binary and body is not None:
        body, encoded = base64.b64encode(body.encode()).decode(), True
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": headers or {},
        "multiValueHeaders": {k: [v] for k, v in (headers or {}).items()},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "path": f"/v1{path}",
            "stage": "v1",
            "requestId": "test",
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "body": body,
        "isBase64Encoded": encoded,
    }


class LambdaContext:
    function_name = "test"
    memory_limit_in_mb = 128
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:test"
    aws_request_id = "test"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def controller_as(key: str, lambda_context, with_headers: bool = False):
    """The controller's handler called in this process with `key`'s bearer token: call(method,
    path, query=, body=, headers=) -> (status, body bytes or text[, lower-cased headers])."""
    import base64

    handler = load_function("controller")

    def call(method: str, path: str, **kw):
        headers = {"authorization": f"Bearer {key}", **kw.pop("headers", {})}
        resp = handler.handler(api_event(method, path, headers=headers, **kw), lambda_context)
        body = base64.b64decode(resp["body"]) if resp.get("isBase64Encoded") else resp["body"]
        if not with_headers:
            return resp["statusCode"], body
        answered = {k.lower(): v for k, v in (resp.get("headers") or {}).items()}
        answered |= {k.lower(): v[0] for k, v in (resp.get("multiValueHeaders") or {}).items()}
        return resp["statusCode"], body, answered

    return call


@pytest.fixture
def lambda_context():
    return LambdaContext()


def make_stores(bucket: str, table: str):
    """Inside an active moto mock: the content bucket and the single table with its key schema."""
    import boto3

    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=bucket)
    boto3.client("dynamodb").create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
    )
    return s3


MOTO_BUCKET, MOTO_TABLE = "content", "table"


@dataclass
class MotoFileSystems:
    """FileSystem per user over a temp dir (EFS), moto S3 and the moto table."""

    s3: object
    records: object
    objects: object
    root: Path

    def fs(self, user: str):
        from hycloud_core.fs import FileSystem, Namespace

        namespace = Namespace(str(self.root / "ns"), user)
        self.records.dirs.mark_migrated(user)  # as a user created now is (store/users.py)
        return FileSystem(user, namespace, self.records, self.objects, self.s3, MOTO_BUCKET)

    def collect(self, grace_s: int = 0):
        """One collection round; grace 0 is right only when no operation is in flight."""
        from hycloud_core.store.collector import Collector

        return Collector(self.records.table, self.objects, str(self.root / "ns"), grace_s).run()


@pytest.fixture
def moto_table(monkeypatch):
    """The single table (and the content bucket) under moto, as a boto3 Table."""
    import boto3
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        make_stores(MOTO_BUCKET, MOTO_TABLE)
        yield boto3.resource("dynamodb").Table(MOTO_TABLE)


@pytest.fixture
def moto_filesystems(tmp_path, monkeypatch):
    from moto import mock_aws

    from hycloud_core.store.objects import Objects
    from hycloud_core.store.records import Records

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = make_stores(MOTO_BUCKET, MOTO_TABLE)
        records = Records(MOTO_TABLE)
        yield MotoFileSystems(s3, records, Objects(records.table, s3, MOTO_BUCKET), tmp_path)
