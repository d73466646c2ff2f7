"""Keeps Lambda ``FileSystemConfigs`` and maps each EFS access point to a local folder.

LocalStack's Lambda model has no field for file-system configs, and its
CloudFormation handler for ``AWS::Lambda::Function`` does not pass them on, so
they would be lost. The patches here record them per function (account,
region, name) when a function is created or updated, through the API or
through CloudFormation. Each access point ARN gets the folder
``<state>/efs/<access-point-id>/``; ``<state>/efs/map.json`` lists
ARN -> folder so tests and tools can look at what functions wrote.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any

LOG = logging.getLogger(__name__)

_LOCK = threading.RLock()
_CONFIGS: dict[tuple[str, str, str], list[dict[str, str]]] = {}
_KNOWN_ARNS: dict[str, str] = {}
_PATCHED = False


def state_dir() -> Path:
    """The local cloud's state folder, passed in by ``localcloud.py start``."""
    return Path(os.environ.get("HYCLOUD_LOCALCLOUD", os.path.join(os.getcwd(), ".localcloud")))


def efs_root() -> Path:
    return state_dir() / "efs"


def access_point_folder(arn: str) -> Path:
    """Folder standing in for the access point; stable for a given ARN."""
    tail = arn.rsplit("/", 1)[-1]
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", tail) or tail in {".", ".."}:
        tail = "ap-" + hashlib.sha256(arn.encode()).hexdigest()[:16]
    return efs_root() / tail


def set_configs(account: str, region: str, name: str, configs: list[dict[str, Any]] | None) -> None:
    """Record the function's file-system configs (an empty list clears them)."""
    clean = [
        {"Arn": str(c["Arn"]), "LocalMountPath": str(c["LocalMountPath"])}
        for c in configs or []
        if c.get("Arn") and c.get("LocalMountPath")
    ]
    with _LOCK:
        if clean:
            _CONFIGS[(account, region, name)] = clean
        else:
            _CONFIGS.pop((account, region, name), None)
        for cfg in clean:
            folder = access_point_folder(cfg["Arn"])
            folder.mkdir(parents=True, exist_ok=True)
            _KNOWN_ARNS[cfg["Arn"]] = str(folder)
        _write_maps()
    if clean:
        LOG.info("File systems of %s/%s/%s: %s", account, region, name, clean)


def get_configs(account: str, region: str, name: str) -> list[dict[str, str]]:
    with _LOCK:
        return [dict(c) for c in _CONFIGS.get((account, region, name), [])]


def mounts_for(account: str, region: str, name: str) -> list[tuple[Path, str]]:
    """(local folder, mount path) pairs for a function."""
    return [(access_point_folder(c["Arn"]), c["LocalMountPath"]) for c in get_configs(account, region, name)]


def _write_maps() -> None:
    root = efs_root()
    root.mkdir(parents=True, exist_ok=True)
    functions = {
        f"arn:aws:lambda:{region}:{account}:function:{name}": [
            {**c, "LocalPath": str(access_point_folder(c["Arn"]))} for c in configs
        ]
        for (account, region, name), configs in sorted(_CONFIGS.items())
    }
    _write_json(root / "map.json", dict(sorted(_KNOWN_ARNS.items())))
    _write_json(root / "functions.json", functions)


def _write_json(path: Path, data: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def _account_region_from_arn(arn: str) -> tuple[str, str]:
    parts = arn.split(":")
    return parts[4], parts[3]


def _patch_api() -> None:
    """Record configs passed to CreateFunction/UpdateFunctionConfiguration and echo them back."""
    from localstack.services.lambda_.provider import LambdaProvider

    create = LambdaProvider.create_function
    update = LambdaProvider.update_function_configuration
    get_function = LambdaProvider.get_function
    get_configuration = LambdaProvider.get_function_configuration

    @functools.wraps(create)
    def create_function(self, context, request):
        result = create(self, context, request)
        set_configs(
            context.account_id, context.region, result["FunctionName"], request.get("FileSystemConfigs")
        )
        return _with_configs(result)

    @functools.wraps(update)
    def update_function_configuration(self, context, request):
        result = update(self, context, request)
        if "FileSystemConfigs" in request:
            account, region = _account_region_from_arn(result["FunctionArn"])
            set_configs(account, region, result["FunctionName"], request.get("FileSystemConfigs"))
        return _with_configs(result)

    @functools.wraps(get_function)
    def get_function_patched(self, *args, **kwargs):
        result = get_function(self, *args, **kwargs)
        if "Configuration" in result:
            _with_configs(result["Configuration"])
        return result

    @functools.wraps(get_configuration)
    def get_configuration_patched(self, *args, **kwargs):
        return _with_configs(get_configuration(self, *args, **kwargs))

    LambdaProvider.create_function = create_function
    LambdaProvider.update_function_configuration = update_function_configuration
    LambdaProvider.get_function = get_function_patched
    LambdaProvider.get_function_configuration = get_configuration_patched


def _with_configs(config: dict) -> dict:
    arn = config.get("FunctionArn")
    if arn and config.get("FunctionName"):
        account, region = _account_region_from_arn(arn)
        configs = get_configs(account, region, config["FunctionName"])
        if configs:
            config["FileSystemConfigs"] = configs
    return config


def _patch_cloudformation() -> None:
    """Record configs from the ``AWS::Lambda::Function`` resource model."""
    from localstack.services.lambda_.resource_providers.aws_lambda_function import LambdaFunctionProvider

    create = LambdaFunctionProvider.create
    update = LambdaFunctionProvider.update

    def record(request, model) -> None:
        name = (model or {}).get("FunctionName")
        if name:
            set_configs(request.account_id, request.region_name, name, model.get("FileSystemConfigs"))

    @functools.wraps(create)
    def create_patched(self, request):
        event = create(self, request)
        record(request, request.desired_state)
        return event

    @functools.wraps(update)
    def update_patched(self, request):
        event = update(self, request)
        record(request, request.desired_state)
        return event

    LambdaFunctionProvider.create = create_patched
    LambdaFunctionProvider.update = update_patched


def install_patches() -> None:
    global _PATCHED
    with _LOCK:
        if _PATCHED:
            return
        _patch_api()
        _patch_cloudformation()
        _write_maps()
        _PATCHED = True
    LOG.info("Lambda FileSystemConfigs are kept; EFS access points map to %s", efs_root())
