"""Administration straight against the deployment's DynamoDB table (needs AWS credentials, not an API key)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import boto3

from hycloud_core import auth
from hycloud_core.errors import BadRequestError
from hycloud_core.store.quotas import Quota
from hycloud_core.store.records import Records
from hycloud_core.store.users import Users, user_id

_ARN = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:([a-z]{2}(?:-[a-z]+)+-\d):")


def region_of(outputs: dict[str, str]) -> str | None:
    """The deployment's home region, as its outputs name it (in a state machine's ARN)."""
    for value in outputs.values():
        if found := _ARN.match(str(value)):
            return found.group(1)
    return None


def use_outputs_region(outputs_file: Path) -> None:
    """Admin calls go to the home instance's region, whatever region the admin's profile names."""
    stacks = json.loads(Path(outputs_file).read_text()).values()
    home = next((o for o in stacks if "TableName" in o and "ApiUrl" in o), None)
    region = region_of(home) if home else None
    if region:
        boto3.setup_default_session(region_name=region)


def users(table: str, resource: Any | None = None) -> Users:
    return Users((resource or boto3.resource("dynamodb")).Table(table))


def create_account(table: str, user: str, read_only: bool = False, resource: Any | None = None) -> dict:
    """Create a user; return its name, internal id and first API key (only the key's hash is stored)."""
    if not auth.USER_NAME.match(user):
        raise BadRequestError("user names are 1-63 of a-z, 0-9 and '-', starting with a letter or digit")
    key = auth.new_key()
    uid = users(table, resource).create(user, key, read_only=read_only)
    return {"user": user, "id": uid, "api_key": key.token}


def create_user(table: str, user: str, resource: Any | None = None) -> str:
    """Create a user and return its first API key."""
    return create_account(table, user, resource=resource)["api_key"]


def add_key(table: str, user: str, read_only: bool = False, resource: Any | None = None) -> str:
    key = auth.new_key()
    users(table, resource).add_key(user, key, read_only=read_only)
    return key.token


def rotate_key(table: str, user: str, grace_s: int = 0, read_only: bool = False) -> dict:
    """A new key for `user`; the others stop working now, or after `grace_s` seconds."""
    if grace_s < 0:
        raise BadRequestError("--grace must be 0 or more seconds", code="bad-usage")
    key = auth.new_key()
    retired = users(table).rotate(user, key, grace_s=grace_s, read_only=read_only)
    return {"user": user, "api_key": key.token, "key_id": key.key_id, "retired": retired, "grace_s": grace_s}


def quota(table: str, user: str, resource: Any | None = None) -> Quota:
    """The quota of a user by name; its counter is keyed by the user's internal id."""
    uid = user_id(users(table, resource).require(user))
    return Quota(Records(table, resource), uid)


def set_quota(
    table: str, user: str, max_bytes: int | None, max_files: int | None, reset: bool = False
) -> dict:
    q = quota(table, user)
    if reset:
        q.reset_limits()
    q.set_limits(max_bytes, max_files)
    return {"user": user, **q.report()}


def set_trash_retention(table: str, user: str, seconds: int | None) -> dict:
    """The user's own trash retention (None: the deployment's, HYCLOUD_TRASH_RETENTION_S)."""
    from hycloud_core.store.trash_records import TrashRecords

    uid = user_id(users(table).require(user))
    TrashRecords(Records(table).table, uid).set_retention(seconds)
    return {"user": user, "trash_retention_s": seconds}


def recount_usage(table: str, user: str) -> dict:
    counted = quota(table, user).recount()
    return {"user": user, "bytes": counted.bytes, "files": counted.files}
