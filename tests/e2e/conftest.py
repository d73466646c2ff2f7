"""The deployed local cloud, shared by all end-to-end tests of a run.

The session starts the local cloud unless one is already running (and then stops only what it
started), deploys the real CDK app with cdklocal, and hands tests the stack outputs, AWS
clients aimed at it, and users with API keys made by the real admin command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from infra.local import deploy as local
from tests.e2e import server_errors

ROOT = Path(__file__).resolve().parents[2]
HYCLOUD = str(Path(sys.executable).parent / "hycloud")
# what the client remembers between runs (versions, rates) stays in this test session
os.environ.setdefault(
    "HYCLOUD_STATE", os.path.join(tempfile.mkdtemp(prefix="hycloud-state-"), "state.sqlite3")
)


@dataclass
class Deployment:
    outputs: dict[str, str]
    env: dict[str, str]

    @property
    def api_url(self) -> str:
        return self.outputs["LocalApiUrl"]

    def _reach(self, region: str) -> dict[str, str]:
        """Where a boto3 client of the local cloud goes, and its (any) keys."""
        return {
            "endpoint_url": self.env["AWS_ENDPOINT_URL"],
            "region_name": region,
            "aws_access_key_id": "test",
            "aws_secret_access_key": "test",
        }

    def client(self, service: str, region: str = "us-east-1", config: Config | None = None):
        return boto3.client(service, config=config, **self._reach(region))

    def resource(self, service: str, region: str = "us-east-1"):
        return boto3.resource(service, **self._reach(region))

    def object_record(self, content_hash: str) -> dict | None:
        """The OBJ# item of a content hash, attribute values as strings."""
        item = (
            self.client("dynamodb")
            .get_item(
                TableName=self.outputs["TableName"],
                ConsistentRead=True,
                Key={"pk": {"S": f"OBJ#{content_hash}"}, "sk": {"S": "OBJ"}},
            )
            .get("Item")
        )
        return {k: list(v.values())[0] for k, v in item.items()} if item else None

    def upkeep(self, **event) -> dict:
        """Run the upkeep function now; `grace_s=0` only while no operation is in flight."""
        # the whole walk outlasts boto3's 60 s read timeout on a loaded machine, and a retry
        # would run the upkeep again: wait longer than the function may run (300 s), and ask once
        lam = self.client("lambda", config=Config(read_timeout=360, retries={"total_max_attempts": 1}))
        fn = self.outputs["CacheUpkeepFunctionName"]
        response = lam.invoke(FunctionName=fn, Payload=json.dumps(event).encode())
        result = json.loads(response["Payload"].read())
        assert "FunctionError" not in response, result
        return result

    def efs_root(self, access_point: str | None = None) -> Path:
        """Local folder behind the functions' /mnt/efs (the access point's root): the home
        instance's, or another instance's by its access point."""
        mapping = json.loads((ROOT / ".localcloud" / "efs" / "map.json").read_text())
        ap = access_point or self.outputs["AccessPointId"]
        for arn, folder in mapping.items():
            if arn.endswith(ap):
                return Path(folder)
        raise KeyError(f"access point {ap} not in {mapping}")


CLOUD_ENV: dict[str, str] = {}  # the deployed cloud's, once the session has one


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries what the functions logged as errors while it ran."""
    report = yield
    if report.when == "call" and report.failed and CLOUD_ENV:
        try:
            lines = server_errors.logged_since(CLOUD_ENV, call.start - 2)
        except Exception as err:  # the report must not fail for want of logs
            lines = [f"(function logs unavailable: {err})"]
        if lines:
            report.sections.append(("function errors logged during the test", "\n".join(lines)))
    return report


@pytest.fixture(scope="session")
def deployment():
    """The deployed app: deployed by `make test` before the lanes start (infra/local/run_tests.py),
    or else by this session, which then stops the cloud at the end if it started it."""
    from tests.conftest import PHASES

    if os.environ.get(local.DEPLOYED_ENV):
        CLOUD_ENV.update(local.cloud_env())
        yield Deployment(json.loads(local.OUTPUTS.read_text()).popitem()[1], dict(CLOUD_ENV))
        return
    t0 = time.monotonic()
    started = local.start()
    PHASES["start local cloud"] = time.monotonic() - t0
    try:
        env = local.cloud_env()
        CLOUD_ENV.update(env)
        t0 = time.monotonic()
        outputs = local.deploy(log=lambda msg: None)
        PHASES["deploy (cdklocal bootstrap + deploy)"] = time.monotonic() - t0
        yield Deployment(outputs, env)
    finally:
        if started:
            t0 = time.monotonic()
            local.stop()
            PHASES["stop local cloud"] = time.monotonic() - t0


class ApiSession:
    """Raw REST calls with this user's key: status codes as they are, no client retries."""

    def __init__(self, base: str, key: str) -> None:
        import requests

        self.base, self.session = base.rstrip("/"), requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"

    def call(self, method: str, route: str, **kwargs):
        """One request; a read that got no answer at all is asked once more on a new connection.

        Only for reads, and only when no status came back: a status is always the test's to judge.
        The local gateway has once left a GET unanswered for a minute under a full suite's load
        (the function was never invoked: no 504 from the integration timeout); the warning keeps
        such a stall visible in the run's summary.
        """
        import requests

        url = self.base + route
        try:
            return self.session.request(method, url, timeout=(10, 60), **kwargs)
        except (requests.ConnectionError, requests.Timeout) as error:
            if method.upper() not in ("GET", "HEAD"):
                raise
            import warnings

            warnings.warn(
                f"{method} {route}: no answer ({error!r}); asked again on a new connection", stacklevel=2
            )
            self.session.close()
            return self.session.request(method, url, timeout=(10, 60), **kwargs)


@dataclass
class User:
    name: str
    key: str
    deployment: Deployment
    id: str = ""  # internal id: the namespace folder and the NS#/LOCK#/UPLOAD# records are keyed by it

    @property
    def ns_key(self) -> str:
        """What the user's namespace and records are keyed by: the internal id."""
        return self.id or self.name

    def ns_dir(self) -> Path:
        return self.deployment.efs_root() / "ns" / self.ns_key

    def api(self) -> ApiSession:
        return ApiSession(self.deployment.api_url, self.key)

    def sdk(self):
        from hycloud.sdk import HyCloud

        return HyCloud(self.deployment.api_url, self.key)

    def cli_env(self, **extra: str) -> dict[str, str]:
        """The environment of a `hycloud` run as this user: no config file of the machine's."""
        return {
            **os.environ,
            "HYCLOUD_ENDPOINT": self.deployment.api_url,
            "HYCLOUD_API_KEY": self.key,
            "HYCLOUD_CONFIG": "/nonexistent/config.json",
            **extra,
        }

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        env = self.cli_env()
        result = subprocess.run([HYCLOUD, *args], env=env, capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise AssertionError(
                f"hycloud {' '.join(args)} -> {result.returncode}\n{result.stdout}{result.stderr}"
            )
        return result


def _make_user(deployment: Deployment, prefix: str) -> User:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, **deployment.env}
    result = subprocess.run(
        [HYCLOUD, "--json", "admin", "create-user", name, "--table", deployment.outputs["TableName"]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    created = json.loads(result.stdout)
    return User(name, created["api_key"], deployment, created.get("id", name))


def _user_fixture(prefix: str):
    """A session's user named `prefix-<random>`, as a fixture called `prefix`."""

    @pytest.fixture(scope="session", name=prefix)
    def user(deployment) -> User:
        return _make_user(deployment, prefix)

    return user


alice, bob, carol, dave = (_user_fixture(name) for name in ("alice", "bob", "carol", "dave"))


@pytest.fixture(scope="session")
def instances(deployment) -> dict[str, dict[str, str]]:
    """Every instance's outputs by region, home first; skips where erasure coding has too few
    (it needs three: hycloud:regions)."""
    found = local.instances()
    if len(found) < 3:
        pytest.skip("erasure coding needs three instances (hycloud:regions)")
    return found
