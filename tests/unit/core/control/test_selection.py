import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.control.selection import select_service_instances


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
