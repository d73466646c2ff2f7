"""LocalStack runtime executor that runs each execution environment as a host process.

Speaks the same protocol as LocalStack's Docker executor (see
``localstack/services/lambda_/invocation/docker_runtime_executor.py`` and
``executor_endpoint.py``): the runtime process reports ``/status/<id>/ready``,
receives ``POST /invoke`` and posts logs and the result back to the gateway.
The runtime itself is ``bootstrap.py`` run by a Python 3.12 interpreter that
holds only what AWS's runtime provides (boto3); function code and layers come
from LocalStack's unzipped archives.

Each process runs in a private mount namespace (when the host allows it) where
EFS access points are bind-mounted at their ``LocalMountPath`` and ``/tmp`` is a
folder of its own. Timeouts are enforced here, outside the function process:
the process is killed, the invocation fails with ``Task timed out`` and the
next invocation starts a fresh process, as on AWS. Unlike AWS, the timed-out
invocation's log also holds its threads' stacks half a second before (dumped by
``bootstrap.py``): where it waited.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import Future
from functools import cache
from http import HTTPStatus
from pathlib import Path

from localstack import config
from localstack.http import Response
from localstack.services.lambda_.invocation.executor_endpoint import (
    ExecutorEndpoint,
    StatusErrorException,
)
from localstack.services.lambda_.invocation.lambda_models import FunctionVersion, InvocationResult
from localstack.services.lambda_.invocation.runtime_executor import LambdaRuntimeException, RuntimeExecutor

from hycloud_local_lambda import efs

LOG = logging.getLogger(__name__)

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")
# python3.12 is the project's runtime; other python3.x functions (CDK's own custom-resource
# handlers use python3.13) run on the same interpreter, which is close enough for them.
RUNTIME_PREFIX = "python3."

# Runs inside the new mount namespace: private /mnt and /tmp, one bind mount per access point.
MOUNT_SCRIPT = """set -e
tmp="$1"; py="$2"; boot="$3"; shift 3
mount -t tmpfs -o mode=0755,size=1m hycloud-mnt /mnt
if [ -n "$tmp" ]; then mount --bind "$tmp" /tmp; fi
while [ "$#" -ge 2 ]; do
  mkdir -p "$2"
  mount --bind "$1" "$2"
  shift 2
done
exec "$py" "$boot"
"""


def runtime_python() -> str:
    return os.environ.get("HYCLOUD_LAMBDA_PYTHON") or shutil.which("python3.12") or "python3.12"


@cache
def mount_namespace_available() -> bool:
    """True when ``unshare -m`` and bind mounts work here (root with CAP_SYS_ADMIN)."""
    if os.environ.get("HYCLOUD_LAMBDA_MOUNT_NAMESPACE", "1") == "0" or not shutil.which("unshare"):
        return False
    if _under("/mnt", efs.state_dir(), Path(runtime_python()).resolve()):
        LOG.warning("The local cloud lives under /mnt; EFS paths are passed via environment instead")
        return False
    probe = "mount -t tmpfs -o size=1m hycloud-probe /mnt && mkdir -p /mnt/probe"
    try:
        done = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", probe],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    if done.returncode != 0:
        LOG.warning("No private mount namespace (%s); EFS paths are passed via environment", done.stderr)
    return done.returncode == 0


class ProcessEndpoint(ExecutorEndpoint):
    """Executor endpoint that learns the runtime's port from its ready message."""

    def status_ready(self, request, executor_id: str) -> Response:
        try:
            self.container_port = int(json.loads(request.data or b"{}")["port"])
        except (ValueError, KeyError, TypeError):
            self.startup_future.set_exception(
                StatusErrorException("Runtime reported no port", payload=request.data or b"")
            )
            return Response(status=HTTPStatus.BAD_REQUEST)
        return super().status_ready(request, executor_id)


class LocalProcessRuntimeExecutor(RuntimeExecutor):
    def __init__(self, id: str, function_version: FunctionVersion) -> None:
        super().__init__(id=id, function_version=function_version)
        self.endpoint = ProcessEndpoint(self.id, container_address="127.0.0.1")
        self.env_dir = efs.state_dir() / "lambda-envs" / id
        self.env_vars: dict[str, str] = {}
        self.process: subprocess.Popen | None = None
        self.output_at = 0  # output.log's size when the current invocation began
        self.lock = threading.RLock()
        self.stopped = False
        self.needs_restart = False
        self.current_invoke = ""

    # lifecycle

    def start(self, env_vars: dict[str, str]) -> None:
        self.endpoint.start()
        self.env_vars = self._environment(env_vars)
        self._spawn()
        self.endpoint.wait_for_startup()

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            self._kill()
        try:
            self.endpoint.shutdown()
        except Exception as e:  # the endpoint may not be registered yet
            LOG.debug("Shutting down endpoint of %s: %s", self.id, e)
        shutil.rmtree(self.env_dir / "tmp", ignore_errors=True)

    def invoke(self, payload: dict[str, str]) -> InvocationResult:
        if self.needs_restart:
            self._restart()
        timeout = float(self.function_version.config.timeout)
        self.current_invoke = payload["invoke-id"]
        self.output_at = self._output_size()
        timer = threading.Timer(timeout, self._time_out, args=(payload["invoke-id"], timeout))
        timer.daemon = True
        timer.start()
        try:
            return self.endpoint.invoke(payload)
        finally:
            timer.cancel()

    # addresses

    def get_address(self) -> str:
        return "127.0.0.1"

    def get_endpoint_from_executor(self) -> str:
        return "127.0.0.1"

    def get_runtime_endpoint(self) -> str:
        port = config.GATEWAY_LISTEN[0].port
        return f"http://127.0.0.1:{port}{self.endpoint.get_endpoint_prefix()}"

    def get_logs(self) -> str:
        try:
            return (self.env_dir / "output.log").read_text(errors="replace")
        except OSError:
            return ""

    # versions

    @classmethod
    def prepare_version(cls, function_version: FunctionVersion) -> None:
        runtime = function_version.config.runtime
        if not (runtime or "").startswith(RUNTIME_PREFIX):
            raise LambdaRuntimeException(
                f"Runtime {runtime} is not supported by the local process executor (python3.x only)"
            )
        if runtime != "python3.12":
            LOG.warning("%s uses %s; it runs on Python 3.12 here", function_version.qualified_arn, runtime)
        if function_version.config.code:
            function_version.config.code.prepare_for_execution()
        for layer in function_version.config.layers:
            if layer.code:
                layer.code.prepare_for_execution()

    @classmethod
    def cleanup_version(cls, function_version: FunctionVersion) -> None:
        pass

    @classmethod
    def validate_environment(cls) -> bool:
        if not shutil.which(runtime_python()) and not Path(runtime_python()).exists():
            LOG.warning("Lambda runtime Python not found: %s", runtime_python())
            return False
        return True

    # internals

    def _environment(self, env_vars: dict[str, str]) -> dict[str, str]:
        version = self.function_version
        code_dir = str(version.config.code.get_unzipped_code_location())
        layers = [
            str(layer.code.get_unzipped_code_location()) for layer in version.config.layers if layer.code
        ]
        env = {k: str(v) for k, v in env_vars.items()}
        env.update(
            {
                "LAMBDA_TASK_ROOT": code_dir,
                "LAMBDA_RUNTIME_DIR": str(BOOTSTRAP.parent),
                "AWS_EXECUTION_ENV": f"AWS_Lambda_{version.config.runtime}",
                "PATH": f"{Path(runtime_python()).parent}:/usr/local/bin:/usr/bin:/bin",
                "LANG": "en_US.UTF-8",
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                "HOME": "/tmp",
                "HYCLOUD_LOCALCLOUD": str(efs.state_dir()),
                "HYCLOUD_LAMBDA_LAYERS": json.dumps(layers),
            }
        )
        # the AWS rules switch (guard.py); without it, the settings file localcloud.py writes
        if os.environ.get("HYCLOUD_LOCAL_ENFORCE"):
            env["HYCLOUD_LOCAL_ENFORCE"] = os.environ["HYCLOUD_LOCAL_ENFORCE"]
        dynamodb = _dynamodb_local_url()
        if dynamodb:  # DynamoDB calls skip LocalStack's proxy (direct_dynamodb.py)
            env["HYCLOUD_LOCAL_DYNAMODB"] = json.dumps({"url": dynamodb, "account": version.id.account})
        # the function's own variables win, as on AWS
        env.update({k: str(v) for k, v in (version.config.environment or {}).items()})
        mounts = efs.mounts_for(version.id.account, version.id.region, version.id.function_name)
        env["HYCLOUD_EFS_MOUNTS"] = json.dumps({path: str(folder) for folder, path in mounts})
        if not mount_namespace_available() or not private_tmp_possible():
            env["TMPDIR"] = str(self.env_dir / "tmp")
        if not mount_namespace_available():
            env.update(_rewrite_mount_paths(env, mounts))
        return env

    def _command(self) -> list[str]:
        if not mount_namespace_available():
            return [runtime_python(), str(BOOTSTRAP)]
        version = self.function_version
        mounts = efs.mounts_for(version.id.account, version.id.region, version.id.function_name)
        pairs = [str(p) for folder, path in mounts for p in (folder, path)]
        return [
            "unshare", "-m", "--propagation", "private",
            "sh", "-c", MOUNT_SCRIPT, "hycloud-lambda",
            str(self.env_dir / "tmp") if private_tmp_possible() else "",
            runtime_python(), str(BOOTSTRAP), *pairs,
        ]  # fmt: skip

    def _spawn(self) -> None:
        with self.lock:
            if self.stopped:
                raise LambdaRuntimeException(f"Execution environment {self.id} was stopped")
            (self.env_dir / "tmp").mkdir(parents=True, exist_ok=True)
            for folder, _ in efs.mounts_for(
                self.function_version.id.account,
                self.function_version.id.region,
                self.function_version.id.function_name,
            ):
                folder.mkdir(parents=True, exist_ok=True)
            with open(self.env_dir / "output.log", "ab") as log:
                self.process = subprocess.Popen(
                    self._command(),
                    env=self.env_vars,
                    cwd=self.env_vars["LAMBDA_TASK_ROOT"],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            self.needs_restart = False
            threading.Thread(
                target=self._watch, args=(self.process,), name=f"lambda-watch-{self.id}", daemon=True
            ).start()
        LOG.debug("Started runtime process %s for %s", self.process.pid, self.function_version.qualified_arn)

    def _restart(self) -> None:
        """Fresh process after a timeout or crash; AWS re-initialises the sandbox the same way."""
        with self.lock:
            self._kill()
            self.endpoint.startup_future = Future()
            self._spawn()
        self.endpoint.wait_for_startup()

    def _kill(self) -> None:
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            LOG.warning("Runtime process %s did not exit after SIGKILL", proc.pid)

    def _time_out(self, invoke_id: str, timeout: float) -> None:
        with self.lock:
            self.needs_restart = True
            self._kill()
        message = f"RequestId: {invoke_id} Error: Task timed out after {timeout:.2f} seconds"
        self._fail_invocation(
            invoke_id, {"errorType": "Sandbox.Timedout", "errorMessage": message}, self._output_since()
        )

    def _output_size(self) -> int:
        try:
            return (self.env_dir / "output.log").stat().st_size
        except OSError:
            return 0

    def _output_since(self, limit: int = 64 * 1024) -> str:
        """What the runtime wrote since the invocation began (bootstrap.py dumps a timed-out
        invocation's stacks there): at most its last `limit` bytes."""
        try:
            with open(self.env_dir / "output.log", "rb") as log:
                log.seek(max(self.output_at, self._output_size() - limit))
                return log.read(limit).decode(errors="replace")
        except OSError:
            return ""

    def _watch(self, proc: subprocess.Popen) -> None:
        """Report a runtime that exits on its own (crash, ``sys.exit``) instead of hanging."""
        code = proc.wait()
        time.sleep(0.05)
        with self.lock:
            if proc is not self.process or self.stopped or self.needs_restart:
                return  # replaced, stopped or killed on purpose
            self.needs_restart = True
        message = f"RequestId: {self.current_invoke} Error: Runtime exited with error: exit status {code}"
        error = {"errorType": "Runtime.ExitError", "errorMessage": message}
        startup = self.endpoint.startup_future
        if startup is not None and not startup.done():
            startup.set_exception(StatusErrorException("Runtime exited", payload=json.dumps(error).encode()))
        self._fail_invocation(self.current_invoke, error)

    def _fail_invocation(self, invoke_id: str, error: dict[str, str], output: str = "") -> None:
        future = self.endpoint.invocation_future
        if future is None or future.done():
            return
        logs = f"{self.endpoint.logs or ''}{output}{error['errorMessage']}\n"
        result = InvocationResult(invoke_id, json.dumps(error).encode(), is_error=True, logs=logs)
        try:
            future.set_result(result)
        except Exception:  # the response won the race
            pass


def _under(top: str, *paths: Path) -> bool:
    return any(Path(p).resolve().is_relative_to(top) for p in paths)


def private_tmp_possible() -> bool:
    """Binding /tmp would hide the code and interpreter if the local cloud itself lives there."""
    return not _under("/tmp", efs.state_dir(), Path(runtime_python()).resolve())


def _rewrite_mount_paths(env: dict[str, str], mounts: list[tuple[Path, str]]) -> dict[str, str]:
    """Without a mount namespace, point variables naming a mount path at its local folder."""
    rewritten = {}
    for key, value in env.items():
        for folder, path in mounts:
            if value == path or value.startswith(path.rstrip("/") + "/"):
                rewritten[key] = str(folder) + value[len(path.rstrip("/")) :]
    return rewritten


def _dynamodb_local_url() -> str | None:
    """DynamoDB Local's URL while LocalStack runs it (it starts with the first DynamoDB request)."""
    try:
        from localstack.services.dynamodb.server import DynamodbServer

        server = DynamodbServer.get()
        return server.url if server.is_running() and server.is_up() else None
    except Exception:  # noqa: BLE001 - without it, DynamoDB is reached through LocalStack
        LOG.warning("DynamoDB Local's address unknown; functions reach DynamoDB through LocalStack")
        return None
