"""Deploy the CDK app into the local cloud and write its outputs to .localcloud/outputs.json.

Uses the same app and templates as a real `cdk deploy`; only the endpoint differs. The REST
API's public URL names a DNS host that does not resolve offline, so a `LocalApiUrl` output is
added that reaches the same API through the gateway on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / ".localcloud"
OUTPUTS = STATE / "outputs.json"
CDKLOCAL = STATE / "node" / "node_modules" / ".bin" / "cdklocal"
LOCALCLOUD = ROOT / "infra" / "local" / "localcloud.py"


def cloud_env() -> dict[str, str]:
    """Environment for AWS clients aimed at the local cloud."""
    out = subprocess.run(
        [sys.executable, str(LOCALCLOUD), "env", "--json"], check=True, capture_output=True, text=True
    ).stdout
    return {k: str(v) for k, v in json.loads(out).items()}


def start() -> bool:
    """Start the local cloud; True when this call started it (so the caller should stop it)."""
    status = subprocess.run([sys.executable, str(LOCALCLOUD), "status"], capture_output=True, text=True)
    if status.returncode == 0:
        return False
    subprocess.run([sys.executable, str(LOCALCLOUD), "start"], check=True)
    return True


def stop() -> None:
    subprocess.run([sys.executable, str(LOCALCLOUD), "stop"], check=True)


def _run_cdk(args: list[str], env: dict[str, str]) -> None:
    cmd = [str(CDKLOCAL), *args]
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{tail}")


def deploy(log=print) -> dict[str, str]:
    """Bootstrap (first time per local cloud) and deploy; return the instance stack's outputs."""
    env = {
        **os.environ,
        **cloud_env(),
        "CDK_DISABLE_VERSION_CHECK": "1",
        "CDK_DISABLE_CLI_TELEMETRY": "1",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "1",
    }
    started = time.monotonic()
    _run_cdk(["bootstrap", "aws://000000000000/us-east-1"], env)
    log(f"bootstrap: {time.monotonic() - started:.1f}s")
    started = time.monotonic()
    deploy_args = ["deploy", "--all", "--require-approval", "never", "--outputs-file", str(OUTPUTS)]
    _run_cdk([*deploy_args, "-c", "hycloud:tracing=false"], env)  # LocalStack's free edition has no X-Ray
    log(f"deploy: {time.monotonic() - started:.1f}s")
    data = json.loads(OUTPUTS.read_text())
    name, outputs = next(iter(data.items()))
    api_id = re.match(r"https?://([^.]+)\.execute-api", outputs["ApiUrl"]).group(1)
    outputs["LocalApiUrl"] = f"{env['AWS_ENDPOINT_URL']}/restapis/{api_id}/v1/_user_request_"
    OUTPUTS.write_text(json.dumps({name: outputs}, indent=2))
    return outputs


if __name__ == "__main__":
    start()
    print(json.dumps(deploy(), indent=2))
