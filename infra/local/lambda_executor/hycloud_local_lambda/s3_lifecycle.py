"""A bucket's ``LifecycleConfiguration`` from its CloudFormation template, applied locally.

LocalStack's ``AWS::S3::Bucket`` provider creates the bucket, its CORS, versioning and tags, but
drops ``LifecycleConfiguration``: the expiry of shares, staging and relay objects and the
Intelligent-Tiering transitions of contents and blocks (infra constructs/storage_tiers.py) were
accepted and never set, and its update does nothing at all. LocalStack's S3 itself keeps a
lifecycle configuration and answers with it (GetBucketLifecycleConfiguration, the Expiration
header), so after the provider creates or updates a bucket this puts the configuration the
template asks for, rule for rule as CloudFormation translates it for S3.
"""

from __future__ import annotations

import logging
from typing import Any

LOG = logging.getLogger(__name__)


def _filter(rule: dict[str, Any]) -> dict[str, Any]:
    """S3's Filter: a prefix, size bounds and tags, under And when there are several."""
    parts: dict[str, Any] = {}
    if "Prefix" in rule:
        parts["Prefix"] = rule["Prefix"]
    for key in ("ObjectSizeGreaterThan", "ObjectSizeLessThan"):
        if key in rule:
            parts[key] = int(rule[key])
    tags = [{"Key": t["Key"], "Value": t["Value"]} for t in rule.get("TagFilters") or []]
    if len(tags) == 1 and not parts:
        return {"Tag": tags[0]}
    if tags:
        parts["Tags"] = tags
    if len(parts) > 1 or tags:
        return {"And": parts}
    return parts or {"Prefix": ""}


def _transitions(rule: dict[str, Any]) -> list[dict[str, Any]]:
    listed = list(rule.get("Transitions", []))
    if single := rule.get("Transition"):
        listed.append(single)
    out = []
    for t in listed:
        step: dict[str, Any] = {"StorageClass": t["StorageClass"]}
        if "TransitionInDays" in t:
            step["Days"] = int(t["TransitionInDays"])
        if "TransitionDate" in t:
            step["Date"] = t["TransitionDate"]
        out.append(step)
    return out


def s3_rule(rule: dict[str, Any], index: int) -> dict[str, Any]:
    """One CloudFormation rule as PutBucketLifecycleConfiguration takes it."""
    out: dict[str, Any] = {
        "ID": rule.get("Id") or f"rule-{index}",
        "Filter": _filter(rule),
        "Status": rule.get("Status", "Enabled"),
    }
    if abort := rule.get("AbortIncompleteMultipartUpload"):
        out["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(abort["DaysAfterInitiation"])}
    if "ExpirationInDays" in rule:
        out["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
    elif "ExpirationDate" in rule:
        out["Expiration"] = {"Date": rule["ExpirationDate"]}
    if transitions := _transitions(rule):
        out["Transitions"] = transitions
    if "NoncurrentVersionExpirationInDays" in rule:
        out["NoncurrentVersionExpiration"] = {
            "NoncurrentDays": int(rule["NoncurrentVersionExpirationInDays"])
        }
    return out


def lifecycle_from_cfn(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The S3 API's LifecycleConfiguration for a template's; None when it has no rules."""
    rules = (config or {}).get("Rules") or []
    return {"Rules": [s3_rule(r, i) for i, r in enumerate(rules)]} if rules else None


def apply(s3_client: Any, bucket: str, config: dict[str, Any] | None) -> None:
    """Put the template's configuration on the bucket, or remove one the template no longer has."""
    wanted = lifecycle_from_cfn(config)
    if wanted:
        s3_client.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration=wanted)
    else:
        s3_client.delete_bucket_lifecycle(Bucket=bucket)


def install_patches() -> None:
    from localstack.services.cloudformation.resource_provider import OperationStatus
    from localstack.services.s3.resource_providers.aws_s3_bucket import S3BucketProvider

    create, update = S3BucketProvider.create, S3BucketProvider.update

    def create_with_lifecycle(self, request):
        event = create(self, request)
        model = event.resource_model or {}
        if event.status == OperationStatus.SUCCESS and model.get("LifecycleConfiguration"):
            apply(request.aws_client_factory.s3, model["BucketName"], model["LifecycleConfiguration"])
        return event

    def update_with_lifecycle(self, request):
        before = request.previous_state or {}
        wanted = request.desired_state.get("LifecycleConfiguration")
        if before.get("BucketName") and (wanted or before.get("LifecycleConfiguration")):
            apply(request.aws_client_factory.s3, before["BucketName"], wanted)
        return update(self, request)  # LocalStack's: nothing else changes (the engine keeps the bucket)

    S3BucketProvider.create = create_with_lifecycle
    S3BucketProvider.update = update_with_lifecycle
    LOG.info("S3 buckets get the LifecycleConfiguration of their template")
