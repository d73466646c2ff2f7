"""Stand-in CloudFormation providers for ``AWS::EFS::*`` (EFS is not in the free LocalStack).

Without them LocalStack accepts these resources but gives every one the id
``unknown``, so all access points would share one ARN and one folder. These
providers hand out AWS-shaped ids and ARNs (``fs-…``, ``fsap-…``, ``fsmt-…``)
so each access point gets its own folder via ``efs.py``; nothing else is
emulated (no mount targets, policies or root-directory creation on a shared
file system). A file system's ``LifecyclePolicies`` are checked as AWS checks
them (``efs_lifecycle.py``) and otherwise ignored: a folder has no storage classes.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from localstack.services.cloudformation.resource_provider import (
    CloudFormationResourceProviderPlugin,
    OperationStatus,
    ProgressEvent,
    ResourceProvider,
    ResourceRequest,
)

from .efs_lifecycle import lifecycle_error

SCHEMAS = Path(__file__).with_name("schemas")


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"aws_efs_{name}.schema.json").read_text())


def _hex_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(9)[:17]}"


def _arn(request: ResourceRequest, kind: str, ident: str) -> str:
    return f"arn:aws:elasticfilesystem:{request.region_name}:{request.account_id}:{kind}/{ident}"


class _PlaceholderProvider(ResourceProvider[dict]):
    """Creates a record with generated ids; updates keep them; deletes do nothing."""

    ID_PROPERTY = ""
    ID_PREFIX = ""  # AWS's prefix of the id: fs-…, fsap-…, fsmt-…
    ARN_KIND = ""  # the resource part of its ARN; empty for a resource that has no ARN

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.SCHEMA = _schema(cls.TYPE.rsplit("::", 1)[-1].lower())  # AWS::EFS::AccessPoint: accesspoint

    def fill(self, request: ResourceRequest, model: dict) -> None:
        """Hands out the id (and ARN) AWS would, so that each resource is told apart."""
        model[self.ID_PROPERTY] = _hex_id(self.ID_PREFIX)
        if self.ARN_KIND:
            model["Arn"] = _arn(request, self.ARN_KIND, model[self.ID_PROPERTY])

    def refusal(self, model: dict) -> ProgressEvent[dict] | None:
        """The failure AWS would answer for these properties; None when it accepts them."""
        return None

    def create(self, request: ResourceRequest[dict]) -> ProgressEvent[dict]:
        model = request.desired_state
        if refused := self.refusal(model):
            return refused
        self.fill(request, model)
        return ProgressEvent(status=OperationStatus.SUCCESS, resource_model=model)

    def update(self, request: ResourceRequest[dict]) -> ProgressEvent[dict]:
        model = {**request.desired_state}
        if refused := self.refusal(model):
            return refused
        for key, value in (request.previous_state or {}).items():
            if key == self.ID_PROPERTY or key in ("Arn", "FileSystemArn", "IpAddress"):
                model[key] = value
        return ProgressEvent(status=OperationStatus.SUCCESS, resource_model=model)

    def delete(self, request: ResourceRequest[dict]) -> ProgressEvent[dict]:
        return ProgressEvent(status=OperationStatus.SUCCESS, resource_model={})

    def read(self, request: ResourceRequest[dict]) -> ProgressEvent[dict]:
        return ProgressEvent(status=OperationStatus.SUCCESS, resource_model=request.desired_state)


class FileSystemProvider(_PlaceholderProvider):
    TYPE = "AWS::EFS::FileSystem"
    ID_PROPERTY = "FileSystemId"
    ID_PREFIX, ARN_KIND = "fs", "file-system"

    def refusal(self, model):
        if error := lifecycle_error(model):
            return ProgressEvent(status=OperationStatus.FAILED, message=error, error_code="InvalidRequest")
        return None


class AccessPointProvider(_PlaceholderProvider):
    TYPE = "AWS::EFS::AccessPoint"
    ID_PROPERTY = "AccessPointId"
    ID_PREFIX, ARN_KIND = "fsap", "access-point"


class MountTargetProvider(_PlaceholderProvider):
    TYPE = "AWS::EFS::MountTarget"
    ID_PROPERTY = "Id"
    ID_PREFIX = "fsmt"

    def fill(self, request, model):
        super().fill(request, model)
        model["IpAddress"] = model.get("IpAddress") or "127.0.0.1"


class _Plugin(CloudFormationResourceProviderPlugin):
    provider: type[ResourceProvider] = ResourceProvider

    def __init__(self):
        self.factory = None

    def load(self):
        self.factory = self.provider


class FileSystemProviderPlugin(_Plugin):
    name = "AWS::EFS::FileSystem"
    provider = FileSystemProvider


class AccessPointProviderPlugin(_Plugin):
    name = "AWS::EFS::AccessPoint"
    provider = AccessPointProvider


class MountTargetProviderPlugin(_Plugin):
    name = "AWS::EFS::MountTarget"
    provider = MountTargetProvider
