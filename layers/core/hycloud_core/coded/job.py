"""What a relay or delta job reads from its input to rebuild a coded file (docs/GEO.md).

The controller names the layout and every instance's bucket. At home the layout is a file in the
relay cache (`erasure_ref`); at a data instance, whose EFS the controller cannot reach, it is an
object in that instance's own bucket (`erasure_key`).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from .. import reach
from ..codec.layout import CodedLayout
from ..fs.blocks import BlockStore
from ..fs.relay_cache import RelayCache
from ..instances import Instance


def is_coded(event: dict[str, Any]) -> bool:
    return bool(event.get("erasure_ref") or event.get("erasure_key"))


def layout(event: dict[str, Any], s3: Any, bucket: str, relay_cache: RelayCache) -> CodedLayout:
    if event.get("erasure_key"):
        body = s3.get_object(Bucket=bucket, Key=event["erasure_key"])["Body"].read()
        return CodedLayout.from_dict(json.loads(body))
    return CodedLayout.from_dict(relay_cache.layout(event["erasure_ref"]))


@cache
def _s3(region: str) -> Any:
    return reach.client("s3", region)


def blocks(event: dict[str, Any]) -> BlockStore:
    """Every instance's bucket the layout may name, each read through its own region's client."""
    instances = [Instance(i["region"], i["bucket"], "", "") for i in event["instances"]]
    return BlockStore(instances, _s3)
