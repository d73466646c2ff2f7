#!/usr/bin/env python3
"""The project's local cloud: LocalStack on the host, without Docker.

    python infra/local/localcloud.py install   # fetch everything into .localcloud/ (idempotent)
    python infra/local/localcloud.py start     # install if needed, start, wait until healthy
    python infra/local/localcloud.py stop      # stop LocalStack, DynamoDB Local and all functions
    python infra/local/localcloud.py status
    python infra/local/localcloud.py env [--json]

All state lives in ``.localcloud/`` at the project root. Standard library only,
so any Python 3.11+ can run it. Port: ``HYCLOUD_LOCAL_PORT`` (default 4566).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STATE = ROOT / ".localcloud"
LS_VENV = STATE / "venv-localstack"
RUNTIME_VENV = STATE / "runtime-python3.12"
FS_ROOT = STATE / "fs"
LIB_DIR = FS_ROOT / "var" / "lib" / "localstack" / "lib"
DDB_DIR = LIB_DIR / "dynamodb-local" / "2"
NODE_DIR = STATE / "node"
UV_VENV = STATE / "uv"
STAMPS = STATE / "stamps"
PID_FILE = STATE / "localstack.pid"
RUN_FILE = STATE / "localstack.json"
LOG_FILE = STATE / "localstack.log"

EXECUTOR_DIR = HERE / "lambda_executor"
DDB_POM_DIR = HERE / "dynamodb-local"
NODE_PKG_DIR = HERE / "cdk-cli"
DDB_MAIN = "hycloud.local.LoopbackServerRunner"
DDB_AGENT = "hycloud.local.NoopAgent"
HEALTH_TIMEOUT_S = 120
STOP_TIMEOUT_S = 10  # no state to flush (nothing persists): a shutdown past this is killed
REGION = "us-east-1"


def log(msg: str) -> None:
    print(f"[localcloud] {msg}", flush=True)


def run(cmd: list[str], quiet: bool = False, **kwargs) -> None:
    """Run a step; a quiet one shows its output only when it fails."""
    if not quiet:
        subprocess.run(cmd, check=True, **kwargs)
        return
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        print(done.stdout + done.stderr, file=sys.stderr)
        raise subprocess.CalledProcessError(done.returncode, cmd)


# ---------------------------------------------------------------- install


def find_python(minor: str) -> str:
    """A Python ``3.<minor>`` interpreter: pyenv's install, then PATH."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = sorted(
        glob.glob(str(pyenv_root / "versions" / f"3.{minor}.*" / "bin" / "python")), reverse=True
    )
    if shutil.which("pyenv"):
        out = subprocess.run(["pyenv", "prefix", f"3.{minor}"], capture_output=True, text=True)
        if out.returncode == 0:
            candidates.append(str(Path(out.stdout.strip().splitlines()[0]) / "bin" / "python"))
    candidates += [p for p in (shutil.which(f"python3.{minor}"),) if p]
    for cand in candidates:
        out = subprocess.run(
            [cand, "-c", "import sys; print(sys.version_info[1])"], capture_output=True, text=True
        )
        if out.returncode == 0 and out.stdout.strip() == minor:
            return cand
    sys.exit(f"Python 3.{minor} not found (looked in {pyenv_root}/versions and on PATH)")


def digest(*paths: Path, extra: str = "") -> str:
    """Hash of the inputs of an install step, so a step reruns only when they change."""
    h = hashlib.sha256(extra.encode())
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            rel = f.relative_to(HERE)
            if f.suffix == ".pyc" or {"__pycache__", "build"} & set(rel.parts) or ".egg-info" in str(rel):
                continue
            h.update(str(rel).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def in_parallel(actions: list) -> None:
    """Run each action in a thread of its own; the first failure is raised once all have ended."""
    errors: list[BaseException] = []

    def guarded(action) -> None:
        try:
            action()
        except BaseException as error:  # SystemExit too: handed to the caller
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(a,), name=a.__name__) for a in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def step(name: str, key: str, marker: Path, action) -> None:
    stamp = STAMPS / name
    if marker.exists() and stamp.exists() and stamp.read_text() == key:
        return
    t0 = time.monotonic()
    log(f"installing {name} ...")
    action()
    STAMPS.mkdir(parents=True, exist_ok=True)
    stamp.write_text(key)
    log(f"installed {name} in {time.monotonic() - t0:.1f} s")


def make_venv(venv: Path, python: str) -> None:
    if not (venv / "bin" / "python").exists():
        run([python, "-m", "venv", str(venv)])


_UV_LOCK = threading.Lock()


def uv() -> str | None:
    """uv from PyPI in a venv of its own: it fetches and installs wheels in parallel, pip one by one
    (LocalStack's 150 locked packages: about a minute against three). None where it cannot be had."""
    with _UV_LOCK:
        exe = UV_VENV / "bin" / "uv"
        if not exe.exists():
            try:
                make_venv(UV_VENV, sys.executable)
                run([str(UV_VENV / "bin" / "python"), "-m", "pip", "install", "-q",
                     "--disable-pip-version-check", "uv"], quiet=True)  # fmt: skip
            except (subprocess.CalledProcessError, OSError):
                log("uv not available; installing with pip")
                return None
        return str(exe)


def pip_install(venv: Path, *args: str) -> None:
    """``pip install args`` into ``venv``, through uv when it is available."""
    python = str(venv / "bin" / "python")
    fast = uv()
    if fast:
        run([fast, "pip", "install", "--quiet", "--python", python, *args])
    else:
        run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args])


def install_localstack() -> None:
    make_venv(LS_VENV, find_python("13"))
    pip_install(LS_VENV, "-r", str(HERE / "requirements-localstack.txt"))


def install_executor() -> None:
    pip = [str(LS_VENV / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    build = STATE / "build" / "lambda_executor"
    shutil.rmtree(build, ignore_errors=True)
    shutil.copytree(EXECUTOR_DIR, build, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    run([*pip, "--no-deps", "--no-build-isolation", "--force-reinstall", str(build)])
    shutil.rmtree(STATE / "cache" / "plux", ignore_errors=True)  # entry-point index of LocalStack's plugins


def install_runtime() -> None:
    make_venv(RUNTIME_VENV, find_python("12"))
    pip_install(RUNTIME_VENV, "-r", str(HERE / "requirements-lambda-runtime.txt"))


def java_home() -> Path:
    javac = shutil.which("javac")
    if not javac:
        sys.exit("javac not found: install a JDK 17+ (Debian: apt-get install openjdk-17-jdk-headless)")
    return Path(javac).resolve().parents[1]


def install_dynamodb_local() -> None:
    """DynamoDB Local from Maven Central, laid out where LocalStack looks for it."""
    if not shutil.which("mvn"):
        sys.exit("mvn not found: install Maven (Debian: apt-get install maven)")
    deps = STATE / "build" / "dynamodb-local-deps"
    shutil.rmtree(deps, ignore_errors=True)
    run(
        [
            "mvn", "-q", "-B", "-f", str(DDB_POM_DIR / "pom.xml"),
            f"-Dmaven.repo.local={STATE / 'm2'}",
            "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={deps}",
        ],
        quiet=True,
    )  # fmt: skip
    shutil.rmtree(DDB_DIR, ignore_errors=True)
    lib = DDB_DIR / "DynamoDBLocal_lib"
    lib.mkdir(parents=True)
    for f in deps.iterdir():
        shutil.copy2(f, lib / f.name)
        if f.name.startswith("libsqlite4java-linux") and f.suffix == ".so":
            # sqlite4java also looks for the unversioned name, as in AWS's own archive
            shutil.copy2(f, lib / (f.name.rsplit("-", 1)[0] + ".so"))
    jars = sorted(p.name for p in lib.glob("*.jar"))
    classes = STATE / "build" / "dynamodb-local-classes"
    shutil.rmtree(classes, ignore_errors=True)
    sources = sorted(str(p) for p in (DDB_POM_DIR / "src").rglob("*.java"))
    classpath = os.pathsep.join(str(lib / j) for j in jars)
    run(["javac", "-nowarn", "--release", "17", "-cp", classpath, "-d", str(classes), *sources])
    write_jar(
        DDB_DIR / "DynamoDBLocal.jar",
        {"Main-Class": DDB_MAIN, "Class-Path": " ".join(f"DynamoDBLocal_lib/{j}" for j in jars)},
        classes,
        exclude="NoopAgent",
    )
    write_jar(
        DDB_DIR / "ddb-local-loader-0.1.jar", {"Premain-Class": DDB_AGENT}, classes, include="NoopAgent"
    )
    java_link = LIB_DIR / "java" / "21"
    java_link.parent.mkdir(parents=True, exist_ok=True)
    if java_link.is_symlink() or java_link.exists():
        java_link.unlink()
    java_link.symlink_to(java_home())


def write_jar(
    path: Path, manifest: dict[str, str], classes: Path, include: str = "", exclude: str = ""
) -> None:
    lines = ["Manifest-Version: 1.0"]
    for key, value in manifest.items():
        line = f"{key}: {value}"
        # manifest lines are limited to 72 bytes; continuation lines start with a space
        lines.append(line[:72])
        lines += [" " + line[i : i + 71] for i in range(72, len(line), 71)]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", "\r\n".join(lines) + "\r\n\r\n")
        for cls in sorted(classes.rglob("*.class")):
            if (include and include not in cls.name) or (exclude and exclude in cls.name):
                continue
            jar.write(cls, str(cls.relative_to(classes)))


def install_cdk_cli() -> None:
    if not shutil.which("npm"):
        sys.exit("npm not found: install Node.js 20+ with npm")
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(NODE_PKG_DIR / name, NODE_DIR / name)
    run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], quiet=True, cwd=NODE_DIR)


def install() -> None:
    t0 = time.monotonic()
    for d in (STATE, FS_ROOT, STATE / "tmp", STATE / "cache", STATE / "efs"):
        d.mkdir(parents=True, exist_ok=True)

    def localstack_and_executor() -> None:
        step(
            "localstack",
            digest(HERE / "requirements-localstack.txt", extra=find_python("13")),
            LS_VENV / "bin" / "python",
            install_localstack,
        )
        step(
            "lambda-executor",
            digest(EXECUTOR_DIR, extra=(STAMPS / "localstack").read_text()),
            LS_VENV,
            install_executor,
        )

    def runtime() -> None:
        step(
            "lambda-runtime",
            digest(HERE / "requirements-lambda-runtime.txt", extra=find_python("12")),
            RUNTIME_VENV / "bin" / "python",
            install_runtime,
        )

    def dynamodb_local() -> None:
        step(
            "dynamodb-local",
            digest(DDB_POM_DIR, extra=str(java_home())),
            DDB_DIR / "DynamoDBLocal.jar",
            install_dynamodb_local,
        )

    def cdk_cli() -> None:
        step(
            "cdk-cli", digest(NODE_PKG_DIR), NODE_DIR / "node_modules" / ".bin" / "cdklocal", install_cdk_cli
        )

    # independent downloads, mostly waiting on the network: side by side
    in_parallel([localstack_and_executor, runtime, dynamodb_local, cdk_cli])
    log(f"install complete ({time.monotonic() - t0:.1f} s)")


# ---------------------------------------------------------------- run


def port() -> int:
    """Port of the running local cloud, else the configured one."""
    if RUN_FILE.exists() and running_pid():
        return int(json.loads(RUN_FILE.read_text())["port"])
    return int(os.environ.get("HYCLOUD_LOCAL_PORT", "4566"))


def endpoint() -> str:
    return f"http://127.0.0.1:{port()}"


def localstack_env(gw_port: int) -> dict[str, str]:
    ext_start = int(os.environ.get("HYCLOUD_LOCAL_EXTERNAL_PORTS_START", "4510"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LOCALSTACK_"))}
    env.update(
        {
            "OVERRIDE_IN_DOCKER": "0",
            "GATEWAY_SERVER": "hypercorn",
            "GATEWAY_LISTEN": f"127.0.0.1:{gw_port}",
            "LOCALSTACK_HOST": f"127.0.0.1:{gw_port}",
            "DNS_ADDRESS": "0",
            "SKIP_SSL_CERT_DOWNLOAD": "1",
            "DISABLE_EVENTS": "1",
            "FILESYSTEM_ROOT": str(FS_ROOT),
            "TMPDIR": str(STATE / "tmp"),
            "XDG_CACHE_HOME": str(STATE / "cache"),
            "EXTERNAL_SERVICE_PORTS_START": str(ext_start),
            "EXTERNAL_SERVICE_PORTS_END": str(ext_start + 50),
            "DYNAMODB_IN_MEMORY": "1",
            # LocalStack's calls to itself (API Gateway invoking a function, a function's logs,
            # stream polls) go straight to its handler chain instead of over HTTP to its own port
            "IN_MEMORY_CLIENT": "1",
            # DynamoDB Local's own streams: the default forwards every write of a streamed table
            # through kinesis-mock, which fell minutes behind a busy table and held up every stream
            "PROVIDER_OVERRIDE_DYNAMODBSTREAMS": "v2",
            # a stream mapping reads BatchSize records a poll, filtered-out ones included: polled
            # every 0.2 s, 1,000 a poll keeps up with 5,000 writes/s (1 s polls: 1,000 writes/s)
            "LAMBDA_EVENT_SOURCE_MAPPING_POLL_INTERVAL_SEC": "0.2",
            "JAVA_TOOL_OPTIONS": f"-Djava.io.tmpdir={STATE / 'tmp'}",
            "LAMBDA_RUNTIME_EXECUTOR": "local-process",
            "NODE_OPTIONS": f"--require={HERE / 'listen-loopback.js'}",
            "SQS_ENDPOINT_STRATEGY": "path",
            # check presigned URLs' signatures and expiry as S3 does (LocalStack skips it by default)
            "S3_SKIP_SIGNATURE_VALIDATION": "0",
            "HYCLOUD_LOCALCLOUD": str(STATE),
            "HYCLOUD_LAMBDA_PYTHON": str(RUNTIME_VENV / "bin" / "python"),
        }
    )
    return env


def port_in_use(number: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", number)) == 0


def running_pid() -> int | None:
    try:
        pid = int(PID_FILE.read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes() if Path(f"/proc/{pid}/cmdline").exists() else b""
    return pid if b"localstack.runtime.main" in cmdline else None


def healthy(timeout: float = 2.0) -> dict | None:
    try:
        with urllib.request.urlopen(f"{endpoint()}/_localstack/health", timeout=timeout) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def runtime_ready() -> bool:
    """LocalStack answers health checks before its runtime is ready; a stop in between waits 30 s."""
    return LOG_FILE.exists() and "\nReady." in LOG_FILE.read_text(errors="replace")


# What the function runtime checks before a call reaches LocalStack (lambda_executor/guard.py):
# each of iam, network, limits is on (refused as AWS refuses), report (logged only) or off; all
# on by default. HYCLOUD_LOCAL_ENFORCE overrides, for debugging (docs/LOCAL_CLOUD_RULES.md).
GUARD_DEFAULT = "on"


def write_guard_settings() -> None:
    """The running cloud's functions read this at each cold start: switching needs no restart."""
    (STATE / "guard").mkdir(parents=True, exist_ok=True)
    enforce = os.environ.get("HYCLOUD_LOCAL_ENFORCE") or GUARD_DEFAULT
    (STATE / "guard" / "settings.json").write_text(json.dumps({"enforce": enforce}) + "\n")


def start() -> None:
    write_guard_settings()
    if running_pid() and healthy():
        log(f"already running (pid {running_pid()}) at {endpoint()}")
        return
    if running_pid():
        log("a previous LocalStack process is not healthy; stopping it first")
        stop()
    install()
    fresh_state()
    gw_port = int(os.environ.get("HYCLOUD_LOCAL_PORT", "4566"))
    if port_in_use(gw_port):
        sys.exit(f"[localcloud] port {gw_port} is taken by another process; set HYCLOUD_LOCAL_PORT")
    t0 = time.monotonic()
    with open(LOG_FILE, "wb") as out:
        proc = subprocess.Popen(
            [str(LS_VENV / "bin" / "python"), "-m", "localstack.runtime.main"],
            env=localstack_env(gw_port),
            cwd=STATE,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    PID_FILE.write_text(str(proc.pid))
    RUN_FILE.write_text(json.dumps({"pid": proc.pid, "port": gw_port, "started": time.time()}))
    while time.monotonic() - t0 < HEALTH_TIMEOUT_S:
        if proc.poll() is not None:
            fail(f"LocalStack exited with code {proc.returncode}")
        if healthy() and runtime_ready():
            log(f"ready at {endpoint()} (pid {proc.pid}) in {time.monotonic() - t0:.1f} s; log: {LOG_FILE}")
            return
        time.sleep(0.25)
    fail(f"LocalStack did not answer {endpoint()}/_localstack/health within {HEALTH_TIMEOUT_S} s")


def fresh_state() -> None:
    """LocalStack keeps its state in memory, so a start is a new cloud: EFS folders start empty too."""
    for name in ("efs", "lambda-envs", "tmp", "guard/facts"):
        shutil.rmtree(STATE / name, ignore_errors=True)
        (STATE / name).mkdir(parents=True)


def fail(msg: str) -> None:
    tail = LOG_FILE.read_text(errors="replace").splitlines()[-40:] if LOG_FILE.exists() else []
    print("\n".join(tail), file=sys.stderr)
    stop()
    sys.exit(f"[localcloud] {msg}; log: {LOG_FILE}")


def local_cloud_pids() -> list[int]:
    """Processes of this local cloud: all carry HYCLOUD_LOCALCLOUD=<state dir> in their environment."""
    marker = f"HYCLOUD_LOCALCLOUD={STATE}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            pids.append(int(entry.name))
    return pids


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if Path(f"/proc/{p}").exists() and not is_zombie(p)]
    return alive


def is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def stop() -> None:
    t0 = time.monotonic()
    pid = running_pid()
    if pid:
        log(f"stopping LocalStack (pid {pid}) ...")
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        if wait_gone([pid], STOP_TIMEOUT_S):
            log("LocalStack did not stop in time; killing it")
    leftovers = local_cloud_pids()
    if leftovers:
        signal_all(leftovers, signal.SIGTERM)
        leftovers = wait_gone(leftovers, 5)
        signal_all(leftovers, signal.SIGKILL)
        leftovers = wait_gone(leftovers, 5)
    PID_FILE.unlink(missing_ok=True)
    RUN_FILE.unlink(missing_ok=True)
    remaining = local_cloud_pids()
    if remaining:
        sys.exit(f"[localcloud] processes still alive after stop: {remaining}")
    log(f"stopped; no local cloud process left ({time.monotonic() - t0:.1f} s)")


def client_env() -> dict[str, str]:
    url = endpoint()
    return {
        "AWS_ENDPOINT_URL": url,
        "AWS_ENDPOINT_URL_S3": url,
        "AWS_S3_FORCE_PATH_STYLE": "1",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "CDK_DEFAULT_ACCOUNT": "000000000000",
        "CDK_DEFAULT_REGION": REGION,
    }


def status() -> int:
    pid = running_pid()
    health = healthy() if pid else None
    info = {
        "running": bool(pid and health),
        "pid": pid,
        "endpoint": endpoint(),
        "efs_map": str(STATE / "efs" / "map.json"),
        "log": str(LOG_FILE),
        "processes": len(local_cloud_pids()),
        "services": {k: v for k, v in (health or {}).get("services", {}).items() if v != "disabled"},
    }
    print(json.dumps(info, indent=2))
    return 0 if info["running"] else 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["install", "install-cdk", "start", "stop", "status", "env"])
    parser.add_argument("--json", action="store_true", help="env: print JSON instead of shell exports")
    args = parser.parse_args(argv)
    if args.command == "install":
        install()
    elif args.command == "install-cdk":  # make deploy: only the pinned CDK CLI, no local cloud
        step(
            "cdk-cli", digest(NODE_PKG_DIR), NODE_DIR / "node_modules" / ".bin" / "cdklocal", install_cdk_cli
        )
    elif args.command == "start":
        start()
    elif args.command == "stop":
        stop()
    elif args.command == "status":
        return status()
    elif args.json:
        print(json.dumps(client_env(), indent=2))
    else:
        print("\n".join(f"export {k}={v}" for k, v in client_env().items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
