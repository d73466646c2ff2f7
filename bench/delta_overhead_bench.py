"""Where a delta job's time goes, from the request to the first delta byte, cold and warm.

Each run uploads a new version of an 8 MiB file and downloads a version-aware delta from the
previous one (a new job every time: jobs are keyed by what they compute). Steps are taken from
the client's clock and the workflow's history (same machine, same clock):
  request -> execution start -> relay of both versions done -> delta Lambda done ->
  execution end -> result seen by the client -> first delta byte.
The first run is cold (new Lambda containers, forced by a changed environment); the rest are warm.

    .venv/bin/python bench/delta_overhead_bench.py [--runs 6]

Needs the local deployment (started and deployed if absent); writes bench/results/delta_overhead.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import boto3

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core"), str(ROOT / "client")]
import lambda_cold  # noqa: E402
import result_files  # noqa: E402
from cloud_jobs import CloudJobs  # noqa: E402

from hycloud.admin import create_user  # noqa: E402
from hycloud.sdk import HyCloud  # noqa: E402
from hycloud.transfer.delta import run_job  # noqa: E402
from hycloud_core import content  # noqa: E402
from hycloud_core.jobs.executions import execution_arn  # noqa: E402
from infra.local import deploy as local  # noqa: E402

SIZE = 8 * 2**20
STEPS = ["start", "relay", "delta_fn", "end", "result", "first_byte"]
COLUMNS = [*STEPS, "total", "encode_work"]


def edit(data: bytes, rnd: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(8):
        at = rnd.randrange(len(out) - 2000)
        out[at : at + 1000] = rnd.randbytes(1000)
    return bytes(out)


def history_marks(sfn, machine: str, job: str) -> dict[str, float]:
    """Epoch seconds of the workflow's milestones; none when the job ran direct (no workflow)."""
    try:
        history = sfn.get_execution_history(executionArn=execution_arn(machine, job), maxResults=1000)
    except sfn.exceptions.ExecutionDoesNotExist:
        return {}
    events = history["events"]
    marks: dict[str, float] = {}
    for e in events:
        ts = e["timestamp"].timestamp()
        name = (e.get("stateExitedEventDetails") or {}).get("name", "")
        if e["type"] == "ExecutionStarted":
            marks["start"] = ts
        elif e["type"].endswith("StateExited") and name.startswith("Fetch"):
            marks["relay"] = ts
        elif e["type"] == "TaskStateExited" and name == "Delta":
            marks["delta_fn"] = ts
        elif e["type"] == "ExecutionSucceeded":
            marks["end"] = ts
    return marks


def make_cold(lam, parts: tuple[str, ...] = ("Delta", "Relay", "Controller")) -> None:
    """New containers for these functions: a changed environment retires the warm ones."""
    for fn in lam.list_functions()["Functions"]:
        if not any(part in fn["FunctionName"] for part in parts):
            continue
        env = (fn.get("Environment") or {}).get("Variables", {})
        lam.update_function_configuration(
            FunctionName=fn["FunctionName"],
            Environment={"Variables": {**env, "HYCLOUD_COLD": uuid.uuid4().hex}},
        )
        lam.get_waiter("function_updated_v2").wait(FunctionName=fn["FunctionName"])


def one_run(sdk: HyCloud, sfn, machine: str, path: str, base_hash: str) -> dict:
    t0 = time.time()
    job, result = run_job(sdk.http, "POST", "/v1/delta/download", json={"path": path, "base_hash": base_hash})
    t_result = time.time()
    if result.get("delta"):
        t_first = t_result  # the delta came inline with the result
    else:
        sdk.http.request("GET", "/v1/delta/data", params={"id": job, "offset": 0, "length": 1})
        t_first = time.time()
    marks = history_marks(sfn, machine, job)
    precomputed = marks.get("start", t0) < t0  # computed before the request (at commit)
    return {
        "request": t0,
        **({} if precomputed else marks),
        "result": t_result,
        "first_byte": t_first,
        "inline": bool(result.get("delta")),
        "how": "precomputed" if precomputed else "workflow" if marks else "direct",
        "encode_work": 0.0 if precomputed else result.get("encode_seconds", 0.0),
        "new_from": "" if precomputed else result.get("new_from", ""),
    }


def steps(run: dict) -> dict[str, float]:
    """Seconds spent in each step (from the previous milestone), and the total."""
    out, prev = {}, run["request"]
    for step in STEPS:
        at = run.get(step, prev)
        out[step] = at - prev
        prev = at
    out["total"] = run["first_byte"] - run["request"]
    out["encode_work"] = run["encode_work"]
    return out


def cold_parts(lam, runs: int) -> dict:
    """The delta function's cold start taken apart (bench/lambda_cold.py), cold and warm."""
    name = next(
        fn["FunctionName"]
        for fn in lam.list_functions()["Functions"]
        if "Delta" in fn["FunctionName"] and "Standby" not in fn["FunctionName"]
    )
    role = lam.get_function_configuration(FunctionName=name)["Role"]
    floor = lambda_cold.cold_and_warm(lam, lambda_cold.floor_function(lam, role), {}, runs)
    noop = lambda_cold.cold_and_warm(lam, name, {"action": "warm"}, runs)
    imports = lambda_cold.import_seconds(ROOT / "functions" / "delta")
    return {"spawn_floor": floor, "noop_invoke": noop, "imports": imports}


def parts_markdown(parts: dict, table: dict) -> list[str]:
    cold_job, warm_job = table["on demand, cold"]["total"], table["on demand, warm (median)"]["total"]
    floor, noop, imports = parts["spawn_floor"], parts["noop_invoke"], parts["imports"]
    rows = [
        ("trivial function invoke (spawn floor)", floor["cold"], floor["warm"]),
        ("delta function, no-op invoke", noop["cold"], noop["warm"]),
        ("delta handler's imports (python -X importtime)", imports["seconds"], 0.0),
        ("on-demand delta job, request -> first delta byte", cold_job, warm_job),
    ]
    largest = ", ".join(f"{k} {v:.3f}" for k, v in imports["largest"].items())
    return [
        "",
        "Where the cold on-demand job's time goes (seconds, medians; cold: a new container):",
        "",
        "| part | cold | warm |",
        "| --- | ---: | ---: |",
        *(f"| {label} | {cold:.3f} | {warm:.3f} |" for label, cold, warm in rows),
        "",
        f"Cold minus warm: spawn floor {floor['cold'] - floor['warm']:.3f} s, delta function start "
        f"(floor + imports + set-up) {noop['cold'] - noop['warm']:.3f} s, the job's first call "
        f"{cold_job - warm_job - (noop['cold'] - noop['warm']):.3f} s beyond the function's start. "
        f"Slowest imports: {largest}.",
    ]


def markdown(doc: dict) -> str:
    lines = [
        f"Load average at the start and end: {doc['load'][0]} / {doc['load'][1]}.",
        "",
        f"Delta job overhead, {doc['size_mib']} MiB file, version-aware delta download, local cloud "
        f"(request -> first delta byte; seconds per step, from the previous milestone).",
        "",
        "| run | " + " | ".join(COLUMNS) + " |",
        "| --- | " + " | ".join("---:" for _ in COLUMNS) + " |",
    ]
    for label, s in doc["table"].items():
        where = f" (new version from {s['new_from']})" if s.get("new_from") else ""
        lines.append(f"| {label}{where} | " + " | ".join(f"{s[k]:.3f}" for k in COLUMNS) + " |")
    lines += [
        "",
        "on demand: a delta from two versions back, computed when asked (its base in the relay cache, "
        "the new version there too or read by the function from S3, by the presigned URL the controller "
        "gives a direct job; the job runs direct: the controller invokes the delta function, so its "
        "whole time is in `result`); precomputed at commit: from the "
        "version just before (the usual download), started by the commit that superseded it and ended "
        "before the request (its row is all controller: job ledger, result, inline delta). Cold: new "
        "containers for the job functions (relay, delta) before the request (on demand) or before the "
        "commit whose job computed the delta (precomputed); the controller, which serves every request, "
        "is warm in both, as in the previous milestone.",
        "",
        "start: request to execution start (controller: job ledger, StartExecution); relay: the base "
        "version fetched into the EFS cache (0 when the client's base is reused from it); delta_fn: the "
        "delta task (Lambda invocation, new version read from S3, delta computed), of which encode_work "
        "is the work inside the function; end: to the execution's end; result: until the client has the "
        "result (the start request waits for it); first_byte: 0 when the delta comes inline.",
    ]
    if doc.get("cold_parts"):
        lines += parts_markdown(doc["cold_parts"], doc["table"])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--parts-runs", type=int, default=3, help="cold/warm pairs per cold-start part")
    args = parser.parse_args()
    load = [" ".join(f"{x:.2f}" for x in os.getloadavg())]
    local.start()
    outputs = local.deploy(log=lambda m: None)
    os.environ.update(local.cloud_env())
    sfn = boto3.client("stepfunctions")
    machine = next(
        m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"] if "Delta" in m["name"]
    )
    jobs = CloudJobs(machine, outputs["TableName"])
    sdk = HyCloud(outputs["LocalApiUrl"], create_user(outputs["TableName"], f"ovh-{uuid.uuid4().hex[:8]}"))
    rnd = random.Random(3)
    data = rnd.randbytes(SIZE)
    path = "/bench/overhead.bin"
    on_demand, precomputed, lam = [], [], boto3.client("lambda")
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "v"
        hashes = []
        for _ in range(args.runs + 2):
            data = edit(data, rnd) if hashes else data
            file.write_bytes(data)
            hashes.append(content.hash_file(file)[0])
            if len(hashes) == 4:  # its commit's job runs on new containers: the precomputed cold case
                make_cold(lam, ("Delta", "Relay"))
            sdk.put(file, path, parents=True, via="direct")
            jobs.settle()  # the commit's own job, from the version before, has ended
            if len(hashes) < 3:
                continue
            if len(on_demand) == 0:
                make_cold(lam, ("Delta", "Relay"))
            # two versions back: nothing computed it, the job runs now
            on_demand.append(one_run(sdk, sfn, machine, path, hashes[-3]))
            # one version back (the usual download): computed when the version was committed
            precomputed.append(one_run(sdk, sfn, machine, path, hashes[-2]))
    table = {}
    for label, runs, cold in (("on demand", on_demand, 0), ("precomputed at commit", precomputed, 1)):
        per_run = [steps(r) for r in runs]
        table[f"{label}, cold"] = per_run[cold]
        if runs[cold]["new_from"]:
            table[f"{label}, cold"]["new_from"] = runs[cold]["new_from"]
        del per_run[cold]
        table[f"{label}, warm (median)"] = {k: statistics.median(s[k] for s in per_run) for k in COLUMNS}
    runs = on_demand + precomputed
    per_run = [steps(r) for r in runs]
    parts = cold_parts(lam, args.parts_runs)
    load.append(" ".join(f"{x:.2f}" for x in os.getloadavg()))
    doc = {
        "size_mib": SIZE // 2**20,
        "load": load,
        "runs": runs,
        "steps": per_run,
        "table": table,
        "cold_parts": parts,
    }
    result_files.write("delta_overhead", doc, markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
