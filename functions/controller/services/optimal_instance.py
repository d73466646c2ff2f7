"""Relay and delta jobs over coded files at the user's optimal instance (seed 000 §III-B, docs/GEO.md).

A coded file has no object: its job rebuilds it from k blocks per chunk, its own instance's first.
Run at the instance of the user's lowest measured latency, the file made whole (or the delta) is
next to the user, and the blocks that instance holds cross no region. The controller cannot read
a data instance's EFS, so the job finds its layout in that instance's bucket and leaves there what
the client reads (the file, or the delta), which the controller hands out as presigned GETs.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from botocore.exceptions import ClientError
from context import CONFIG, records, s3, s3_in, user

from hycloud_core.instances import Instance, job_instance, on_ring, reachable
from hycloud_core.jobs.specs import BucketAt, Source, TableAt
from hycloud_core.presigned import MAX_URL_TTL_S
from hycloud_core.relay import LAYOUT_PREFIX, layout_name
from hycloud_core.store.measurements import Measurements

URL_TTL_S = MAX_URL_TTL_S  # a data instance's file or delta; the client asks again when expired


def instance_for(router: APIGatewayRouter, link: Any) -> Instance | None:
    """The data instance a job over this file runs at; None for home (a plain file, a user never
    measured, or one whose optimal instance is home or has no job workflows)."""
    if link is None or not link.erasure:
        return None
    ring = on_ring(records().table)
    view = Measurements(records().table, user(router)).view([i.region for i in ring])
    return job_instance(ring, view["optimal"])


def instance_of(machine: str) -> Instance | None:
    """The data instance whose relay or delta workflow `machine` is."""
    for item in reachable(records().table):
        if machine in (item.relay_state_machine, item.delta_state_machine) and not item.home:
            return item
    return None


def source(at: Instance, content_hash: str, erasure: dict) -> Source:
    """How a job at `at` rebuilds the file: its layout, put in that instance's bucket (by a name
    that changes with the layout), every instance's bucket, and the home table the job meters its
    run in."""
    key = LAYOUT_PREFIX + layout_name(content_hash, erasure)
    s3_in(at.region).put_object(Bucket=at.bucket, Key=key, Body=json.dumps(erasure).encode())
    instances = tuple(BucketAt(region=i.region, bucket=i.bucket) for i in on_ring(records().table))
    return Source(erasure_key=key, instances=instances, table=home_table())


def home_table() -> TableAt:
    """The table a job at a data instance meters its run in (it has none of its own)."""
    return TableAt(name=CONFIG.table, region=s3().meta.region_name)


def holds(at: Instance, key: str) -> bool:
    try:
        s3_in(at.region).head_object(Bucket=at.bucket, Key=key)
    except ClientError:
        return False
    return True


def url(at: Instance, key: str) -> str:
    return s3_in(at.region).generate_presigned_url(
        "get_object", ExpiresIn=URL_TTL_S, Params={"Bucket": at.bucket, "Key": key}
    )


def put(at: Instance, key: str, body: bytes) -> None:
    s3_in(at.region).put_object(Bucket=at.bucket, Key=key, Body=body)


def copy(at: Instance, key: str) -> None:
    """An object of the home bucket (a staged checksum list) copied to the same key at `at`."""
    s3_in(at.region).copy_object(Bucket=at.bucket, Key=key, CopySource={"Bucket": CONFIG.bucket, "Key": key})
