"""Metadata about paths and the caller."""

from __future__ import annotations

from typing import Annotated

from answers import Entry, Instances, KnownUser, Whoami, ok, replies
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from context import CONFIG, namespace, records, s3_endpoint, user, user_name
from models import UserPath
from small_files import in_force

from hycloud_core import auth, content
from hycloud_core.errors import BadRequestError, NotFoundError
from hycloud_core.instances import on_ring
from hycloud_core.store.users import Users

router = APIGatewayRouter()
MIN_CODED_INSTANCES = 3


@router.get("/v1/stat", responses=replies(200, Entry, 404))
def stat(path: Annotated[UserPath, Query()]):
    return ok(namespace(router).stat_hashed(path).to_dict())


@router.get("/v1/whoami", responses=replies(200, Whoami))
def whoami():
    return ok(
        {
            "user": user_name(router),
            "id": user(router),
            "small_file_threshold": in_force(user(router)).threshold,  # chosen by cost, or configured
            "coded_threshold": _coded_threshold(),
            "coded_whole_limit": CONFIG.coded_inline_bytes,
            "part_size": content.PART_SIZE,
            "s3_efs_rate": CONFIG.s3_efs_rate,
        }
    )


@router.get("/v1/users/<name>", responses=replies(200, KnownUser, 404))
def known_user(name: Annotated[str, Path()]):
    """Whether this deployment has an enabled user `name`: what `hycloud crypt add-user` checks
    before it gives them a key slot of an encrypted folder. Only the name comes back."""
    if not auth.USER_NAME.match(name):
        raise BadRequestError("user names are 1-63 of a-z, 0-9 and '-'", code="bad-user-name")
    profile = Users(records().table).profile(name)
    if profile is None or profile.get("disabled"):
        raise NotFoundError(f"no user {name}", code="no-such-user")
    return ok({"user": name})


def _coded_threshold() -> int | None:
    """Coded by default needs RS(3,2) at least: three instances on the ring."""
    enough = len(on_ring(records().table)) >= MIN_CODED_INSTANCES
    return CONFIG.coded_threshold if enough and CONFIG.coded_threshold > 0 else None


@router.get("/v1/instances", responses=replies(200, Instances))
def instances():
    """Every instance on the ring, home first: where coded blocks go (docs/GEO.md)."""
    found = on_ring(records().table)
    return ok(
        {
            "instances": [
                {"region": i.region, "bucket": i.bucket, "home": i.home, "s3_endpoint": s3_endpoint(i.region)}
                for i in found
            ]
        }
    )
