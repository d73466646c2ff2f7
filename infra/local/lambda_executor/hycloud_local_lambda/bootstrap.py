"""Python Lambda runtime for the local cloud; runs as the function's process.

Standard library only: it runs under the Lambda runtime's own Python (3.12),
not LocalStack's. It imports the handler named by ``_HANDLER``, reports
ready (or the init error) to LocalStack, then serves ``POST /invoke`` on
127.0.0.1 and posts each invocation's logs and response or error back, the
way LocalStack's runtime init does inside a Lambda container.
"""

from __future__ import annotations

import collections
import decimal
import faulthandler
import http.server
import importlib
import io
import json
import logging
import os
import queue
import sys
import threading
import time
import traceback
import urllib.request
from importlib import util as importlib_util

ENDPOINT = os.environ["LOCALSTACK_RUNTIME_ENDPOINT"]
RUNTIME_ID = os.environ["LOCALSTACK_RUNTIME_ID"]
# AWS's limit on a synchronous invocation's response (what LocalStack's own runtime enforces too)
MAX_RESPONSE_BYTES = int(os.environ.get("LOCALSTACK_MAX_PAYLOAD_SIZE") or 6291556)
STACKS_BEFORE_S = 0.5  # how long before its timeout an invocation's stacks are dumped
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
IDLE: collections.deque = collections.deque(maxlen=0)  # output between invocations: to the stream only


class Capture(io.TextIOBase):
    """Stdout/stderr that also collects what an invocation prints.

    Installed once, before the handler is imported, and pointed at each invocation's log in turn:
    log handlers made at import time (Powertools' Logger) keep the stream they were given, and on
    AWS whatever a function writes to its stdout reaches its log group.
    """

    def __init__(self, stream, sink=None):
        self.stream = stream
        self.sink = IDLE if sink is None else sink

    def write(self, text: str) -> int:
        self.sink.append(text)
        self.stream.write(text)
        self.stream.flush()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()


class RequestIdFilter(logging.Filter):
    request_id = ""

    def filter(self, record: logging.LogRecord) -> bool:
        record.aws_request_id = self.request_id
        return True


class LambdaLogHandler(logging.Handler):
    """Writes log records to the current stdout, formatted like AWS's Python runtime."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stdout.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


class LambdaContext:
    def __init__(self, invoke_id: str, arn: str, deadline: float):
        self.aws_request_id = invoke_id
        self.invoked_function_arn = arn
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"))
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.identity = None
        self.client_context = None
        self._deadline = deadline

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.time()) * 1000))


def post(path: str, body: bytes) -> None:
    req = urllib.request.Request(
        f"{ENDPOINT}{path}", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with OPENER.open(req, timeout=30) as resp:
        resp.read()


def error_body(exc: BaseException, error_type: str | None = None, message: str | None = None) -> dict:
    frames = traceback.extract_tb(exc.__traceback__)
    return {
        "errorMessage": message if message is not None else str(exc),
        "errorType": error_type or type(exc).__name__,
        "stackTrace": traceback.format_list(frames),
    }


def load_beside(name: str):
    """A module beside this file, under a private name (a function may have a ``guard`` of its own)."""
    private = f"_hycloud_local_{name}"
    spec = importlib_util.spec_from_file_location(
        private, os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    )
    module = importlib_util.module_from_spec(spec)
    sys.modules[private] = module
    spec.loader.exec_module(module)
    return module


def load_guard():
    """The AWS rules checker (guard.py)."""
    return load_beside("guard")


def too_large(body: bytes) -> bytes | None:
    """AWS refuses a response over the synchronous payload limit instead of returning it."""
    if len(body) <= MAX_RESPONSE_BYTES:
        return None
    message = (
        f"Response payload size ({len(body)} bytes) exceeded maximum allowed payload size "
        f"({MAX_RESPONSE_BYTES} bytes)."
    )
    return json.dumps({"errorMessage": message, "errorType": "Function.ResponseSizeTooLarge"}).encode()


def setup_sys_path() -> None:
    """Task root first, then layers (a later layer overrides an earlier one, as in /opt)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    paths = [os.environ["LAMBDA_TASK_ROOT"]]
    for layer in reversed(json.loads(os.environ.get("HYCLOUD_LAMBDA_LAYERS", "[]"))):
        vdir = f"python{sys.version_info.major}.{sys.version_info.minor}"
        paths += [os.path.join(layer, "python", "lib", vdir, "site-packages"), os.path.join(layer, "python")]
    sys.path[:0] = paths


def load_handler():
    """Import ``module.function`` from _HANDLER; errors are typed like AWS's runtime."""
    spec = os.environ.get("_HANDLER", "")
    module_name, _, func_name = spec.rpartition(".")
    module_name = module_name.replace("/", ".")
    if not module_name:
        raise HandlerError(
            "Runtime.MalformedHandlerName", f"Bad handler '{spec}': not enough values to unpack"
        )
    try:
        module = importlib.import_module(module_name)
    except SyntaxError as e:
        raise HandlerError(
            "Runtime.UserCodeSyntaxError", f"Syntax error in module '{module_name}': {e}"
        ) from e
    except ImportError as e:
        raise HandlerError(
            "Runtime.ImportModuleError", f"Unable to import module '{module_name}': {e}"
        ) from e
    handler = getattr(module, func_name, None)
    if handler is None:
        raise HandlerError(
            "Runtime.HandlerNotFound", f"Handler '{func_name}' missing on module '{module_name}'"
        )
    return handler


class HandlerError(Exception):
    def __init__(self, error_type: str, message: str):
        super().__init__(message)
        self.error_type = error_type


def to_json(value) -> bytes:
    def default(obj):
        if isinstance(obj, decimal.Decimal):
            return int(obj) if obj == obj.to_integral_value() else float(obj)
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")

    return json.dumps(value, default=default).encode()


def serve(invocations: queue.Queue) -> int:
    class InvokeHandler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/invoke":
                self.send_response(404)
                self.end_headers()
                return
            invocations.put(json.loads(body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), InvokeHandler)
    threading.Thread(target=server.serve_forever, name="invoke-server", daemon=True).start()
    return server.server_address[1]


def peak_memory_mb() -> int:
    """Peak RSS of this process since exec (ru_maxrss would include the forking parent's)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def invoke(handler, request: dict, id_filter: RequestIdFilter, out_stream, err_stream, guard=None) -> None:
    invoke_id = request["invoke-id"]
    timeout = float(os.environ.get("AWS_LAMBDA_FUNCTION_TIMEOUT", "3"))
    started = time.time()
    context = LambdaContext(invoke_id, request.get("invoked-function-arn", ""), started + timeout)
    os.environ["_X_AMZN_TRACE_ID"] = request.get("trace-id") or ""
    id_filter.request_id = invoke_id
    logs: list[str] = [f"START RequestId: {invoke_id} Version: {context.function_version}\n"]
    out_stream.sink = err_stream.sink = logs
    # an invocation about to time out leaves its threads' stacks in the runtime's output, which
    # the executor puts into its log: where it waited (AWS shows only "Task timed out")
    faulthandler.dump_traceback_later(max(0.1, timeout - STACKS_BEFORE_S), file=sys.__stderr__)
    try:
        payload = request.get("payload") or "{}"
        try:
            body, path = to_json(handler(json.loads(payload), context)), "response"
        except Exception as e:  # the function's error goes back to the caller
            error = error_body(e)
            if isinstance(e, TypeError) and "JSON serializable" in str(e):
                error = error_body(e, "Runtime.MarshalError", f"Unable to marshal response: {e}")
            sys.stdout.write(f"[ERROR] {error['errorType']}: {error['errorMessage']}\n")
            sys.stdout.write("Traceback (most recent call last):\n" + "".join(error["stackTrace"]))
            body, path = json.dumps({**error, "requestId": invoke_id}).encode(), "error"
        limited = too_large(body) if path == "response" and limits_on(guard) else None
        if limited is not None:
            sys.stdout.write(f"[ERROR] {json.loads(limited)['errorMessage']}\n")
            body, path = limited, "error"
    finally:
        faulthandler.cancel_dump_traceback_later()
        out_stream.sink = err_stream.sink = IDLE
    duration = (time.time() - started) * 1000
    max_rss = peak_memory_mb()
    logs.append(f"END RequestId: {invoke_id}\n")
    logs.append(
        f"REPORT RequestId: {invoke_id}\tDuration: {duration:.2f} ms\tBilled Duration: {int(duration) + 1} ms\t"
        f"Memory Size: {context.memory_limit_in_mb} MB\tMax Memory Used: {max_rss} MB\t\n"
    )
    post(f"/invocations/{invoke_id}/logs", json.dumps({"logs": "".join(logs)}).encode())
    post(f"/invocations/{invoke_id}/{path}", body)
    if guard is not None:
        guard.flush()


def limits_on(guard) -> bool:
    return guard is None or guard.modes.get("limits") != "off"


def main() -> int:
    guard_module = load_guard()
    setup_sys_path()
    id_filter = RequestIdFilter()
    log_handler = LambdaLogHandler()
    log_handler.setFormatter(
        logging.Formatter(
            "[%(levelname)s]\t%(asctime)s.%(msecs)03dZ\t%(aws_request_id)s\t%(message)s", "%Y-%m-%dT%H:%M:%S"
        )
    )
    log_handler.formatter.converter = time.gmtime
    log_handler.addFilter(id_filter)
    logging.getLogger().addHandler(log_handler)
    out_stream, err_stream = Capture(sys.stdout), Capture(sys.stderr)
    sys.stdout, sys.stderr = out_stream, err_stream

    invocations: queue.Queue = queue.Queue()
    port = serve(invocations)
    try:  # before the handler's import: its module-level clients too
        load_beside("direct_dynamodb").install()
    except Exception:  # then DynamoDB is reached through LocalStack, as before
        traceback.print_exc()
    try:  # before the handler's import: module-level clients are checked too
        guard = guard_module.install()
    except Exception:  # a defect of the checker must not stop the function; it says so in the log
        traceback.print_exc()
        guard = None
    try:
        handler = load_handler()
    except HandlerError as e:
        error = error_body(e, e.error_type)
        print(f"[ERROR] {e.error_type}: {e}", flush=True)
        post(f"/status/{RUNTIME_ID}/error", json.dumps(error).encode())
        return 1
    except Exception as e:  # an exception while the module initialises
        error = error_body(e)
        traceback.print_exc()
        post(f"/status/{RUNTIME_ID}/error", json.dumps(error).encode())
        return 1
    post(f"/status/{RUNTIME_ID}/ready", json.dumps({"port": port}).encode())
    while True:
        invoke(handler, invocations.get(), id_filter, out_stream, err_stream, guard)


if __name__ == "__main__":
    sys.exit(main())
