"""The parts of a Lambda function's cold start on the local cloud, measured apart.

- spawn floor: a trivial function (no imports, no layer) invoked on a new container, against the
  same invoke on a warm one: what the executor, the runtime's start and the invoke path cost
  whatever the code;
- imports: `python -X importtime` of the function's handler module with the runtime's Python, the
  function's code and the core layer on its path (as the executor runs it);
- a no-op invoke of the real function (its `warm` action), cold and warm: floor + imports + set-up.
"""

from __future__ import annotations

import io
import json
import os
import re
import statistics
import subprocess
import time
import uuid
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_PYTHON = ROOT / ".localcloud" / "runtime-python3.12" / "bin" / "python"
LAYER = ROOT / "build" / "layers" / "core" / "python"
FLOOR_FUNCTION = "hycloud-bench-spawn-floor"


def invoke_seconds(lam, name: str, payload: dict) -> float:
    started = time.perf_counter()
    answer = lam.invoke(FunctionName=name, Payload=json.dumps(payload).encode())
    seconds = time.perf_counter() - started
    if answer.get("FunctionError"):
        raise RuntimeError(f"{name} failed: {answer['Payload'].read()[:500]!r}")
    return seconds


def make_cold(lam, name: str) -> None:
    """A new container on the next invoke: a changed environment retires the warm one."""
    env = (lam.get_function_configuration(FunctionName=name).get("Environment") or {}).get("Variables", {})
    lam.update_function_configuration(
        FunctionName=name, Environment={"Variables": {**env, "HYCLOUD_COLD": uuid.uuid4().hex}}
    )
    lam.get_waiter("function_updated_v2").wait(FunctionName=name)


def cold_and_warm(lam, name: str, payload: dict, runs: int) -> dict[str, float]:
    """Median seconds of an invoke on a new container and on the warm one it leaves."""
    cold, warm = [], []
    for _ in range(runs):
        make_cold(lam, name)
        cold.append(invoke_seconds(lam, name, payload))
        warm.append(invoke_seconds(lam, name, payload))
    return {"cold": statistics.median(cold), "warm": statistics.median(warm)}


def floor_function(lam, role: str) -> str:
    """The trivial function (made once per deployment)."""
    try:
        lam.get_function(FunctionName=FLOOR_FUNCTION)
        return FLOOR_FUNCTION
    except lam.exceptions.ResourceNotFoundException:
        pass
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("index.py", "def handler(event, context):\n    return {}\n")
    lam.create_function(
        FunctionName=FLOOR_FUNCTION,
        Runtime="python3.12",
        Role=role,
        Handler="index.handler",
        Code={"ZipFile": code.getvalue()},
        Timeout=30,
    )
    lam.get_waiter("function_active_v2").wait(FunctionName=FLOOR_FUNCTION)
    return FLOOR_FUNCTION


def import_seconds(function_dir: Path, module: str = "handler", runs: int = 3) -> dict:
    """Median cumulative import time of `module`, and its slowest direct imports (one run's)."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{function_dir}:{LAYER}",
        "POWERTOOLS_TRACE_DISABLED": "true",  # as the local cloud deploys it (no X-Ray)
        "LAMBDA_TASK_ROOT": str(function_dir),
        "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
    }
    totals, children = [], {}
    for _ in range(runs):
        done = subprocess.run(
            [str(RUNTIME_PYTHON), "-X", "importtime", "-c", f"import {module}"],
            env=env,
            cwd="/",
            capture_output=True,
            text=True,
            check=True,
        )
        lines = [m.groups() for m in re.finditer(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", done.stderr)]
        totals.append(next(int(us) for us, _, name in lines if name == module) / 1e6)
        children = {name: int(us) / 1e6 for us, pad, name in lines if len(pad) == 3}
    top = dict(sorted(children.items(), key=lambda kv: -kv[1])[:5])
    return {"seconds": statistics.median(totals), "largest": top}
