"""The checks AWS makes of an ``AWS::EFS::FileSystem``'s ``LifecyclePolicies`` (stdlib only).

The local file system is a folder, so storage classes mean nothing to it and the policies are
otherwise ignored; but a template AWS would refuse must fail here too, not first on AWS. The
rules (EFS API, PutLifecycleConfiguration; CloudFormation's LifecyclePolicy):

- each policy object holds exactly one transition, and no transition is given twice;
- TransitionToIA and TransitionToArchive take AFTER_1_DAY .. AFTER_365_DAYS, and
  TransitionToPrimaryStorageClass takes AFTER_1_ACCESS;
- TransitionToArchive is later than TransitionToIA when both are set;
- Archive needs Elastic throughput and the General Purpose performance mode.
"""

from __future__ import annotations

from typing import Any

DAYS = (1, 7, 14, 30, 60, 90, 180, 270, 365)
AFTER_DAYS = {f"AFTER_{d}_DAY" if d == 1 else f"AFTER_{d}_DAYS": d for d in DAYS}
ALLOWED = {
    "TransitionToIA": set(AFTER_DAYS),
    "TransitionToArchive": set(AFTER_DAYS),
    "TransitionToPrimaryStorageClass": {"AFTER_1_ACCESS"},
}


def _transitions(policies: Any) -> tuple[dict[str, str], str | None]:
    if not isinstance(policies, list):
        return {}, "LifecyclePolicies must be a list of LifecyclePolicy objects"
    found: dict[str, str] = {}
    for policy in policies:
        if not isinstance(policy, dict) or len(policy) != 1:
            return found, "each LifecyclePolicy must have exactly one transition"
        [(name, value)] = policy.items()
        if name not in ALLOWED:
            return found, f"unknown lifecycle transition {name}"
        if value not in ALLOWED[name]:
            return found, f"{name}={value!r}: expected one of {', '.join(sorted(ALLOWED[name]))}"
        if name in found:
            return found, f"{name} is given more than once"
        found[name] = value
    return found, None


def lifecycle_error(props: dict[str, Any]) -> str | None:
    """Why AWS would refuse this file system's lifecycle policies, or None when it accepts them."""
    if "LifecyclePolicies" not in props:
        return None
    found, error = _transitions(props["LifecyclePolicies"])
    if error:
        return error
    archive = found.get("TransitionToArchive")
    if archive is None:
        return None
    ia = found.get("TransitionToIA")
    if ia is not None and AFTER_DAYS[archive] <= AFTER_DAYS[ia]:
        return f"TransitionToArchive ({archive}) must be later than TransitionToIA ({ia})"
    if props.get("ThroughputMode", "bursting") != "elastic":
        return "the Archive storage class needs ThroughputMode elastic"
    if props.get("PerformanceMode", "generalPurpose") != "generalPurpose":
        return "the Archive storage class needs PerformanceMode generalPurpose"
    return None
