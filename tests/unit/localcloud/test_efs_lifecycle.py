"""The local EFS provider refuses the lifecycle policies AWS refuses and accepts the rest."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "infra/local/lambda_executor"))

from hycloud_local_lambda.efs_lifecycle import lifecycle_error  # noqa: E402

IA = {"TransitionToIA": "AFTER_30_DAYS"}
BACK = {"TransitionToPrimaryStorageClass": "AFTER_1_ACCESS"}
ARCHIVE = {"TransitionToArchive": "AFTER_180_DAYS"}


def test_the_apps_policies_are_accepted_on_elastic_throughput():
    props = {"ThroughputMode": "elastic", "LifecyclePolicies": [IA, BACK, ARCHIVE]}
    assert lifecycle_error(props) is None
    assert lifecycle_error({"LifecyclePolicies": [IA, BACK]}) is None  # IA needs no Elastic
    assert lifecycle_error({"ThroughputMode": "bursting"}) is None  # no policies at all
    assert lifecycle_error({"LifecyclePolicies": []}) is None


@pytest.mark.parametrize(
    ("props", "reason"),
    [
        ({"LifecyclePolicies": [IA, ARCHIVE]}, "needs ThroughputMode elastic"),
        (
            {"ThroughputMode": "elastic", "PerformanceMode": "maxIO", "LifecyclePolicies": [ARCHIVE]},
            "needs PerformanceMode generalPurpose",
        ),
        (
            {
                "ThroughputMode": "elastic",
                "LifecyclePolicies": [{"TransitionToIA": "AFTER_180_DAYS"}, ARCHIVE],
            },
            "must be later than TransitionToIA",
        ),
        ({"LifecyclePolicies": [{**IA, **BACK}]}, "exactly one transition"),
        ({"LifecyclePolicies": [IA, IA]}, "more than once"),
        ({"LifecyclePolicies": [{"TransitionToIA": "AFTER_2_DAYS"}]}, "expected one of"),
        ({"LifecyclePolicies": [{"TransitionToPrimaryStorageClass": "AFTER_30_DAYS"}]}, "AFTER_1_ACCESS"),
        ({"LifecyclePolicies": [{"TransitionToGlacier": "AFTER_30_DAYS"}]}, "unknown lifecycle transition"),
        ({"LifecyclePolicies": IA}, "must be a list"),
    ],
)
def test_what_aws_refuses_is_refused(props, reason):
    error = lifecycle_error(props)
    assert error is not None and reason in error
