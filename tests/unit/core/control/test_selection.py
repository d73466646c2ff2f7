import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.control.selection import select_service_instances
from hycloud_core.instances import Instance, job_instance


def test_instances_within_ten_percent_of_the_lowest():
    chosen = select_service_instances({"eu": 110.0, "us": 100.0, "ap": 111.0, "sa": 105.0})
    assert chosen.optimal == "us"
    assert chosen.instances == ("us", "sa", "eu")


def test_ties_break_by_name_and_empty_is_refused():
    assert select_service_instances({"b": 5.0, "a": 5.0}).optimal == "a"
    with pytest.raises(ValueError):
        select_service_instances({})


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.text("abcdef", min_size=1, max_size=3), st.floats(0.1, 1e4), min_size=1, max_size=8)
)
def test_selection_is_exactly_the_set_within_tolerance(latencies):
    chosen = select_service_instances(latencies)
    low = min(latencies.values())
    assert latencies[chosen.optimal] == low
    assert set(chosen.instances) == {n for n, v in latencies.items() if v <= low * 1.1}


HOME = Instance("us-east-1", "home-bucket", "arn:relay:home", "arn:delta:home", home=True)
WEST = Instance("us-west-2", "west-bucket", "arn:relay:west", "arn:delta:west")
BARE = Instance("eu-west-1", "eu-bucket", "", "")  # on the ring, its workflows unknown


@pytest.mark.parametrize(
    "optimal,expected",
    [("us-west-2", WEST), ("us-east-1", None), (None, None), ("eu-west-1", None), ("ap-south-1", None)],
    ids=["data-instance", "home", "never-measured", "no-workflows", "not-on-the-ring"],
)
def test_a_coded_files_job_runs_at_the_optimal_instance_when_it_can(optimal, expected):
    assert job_instance([HOME, WEST, BARE], optimal) == expected
