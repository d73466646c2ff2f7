import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hycloud_core.delta import should_delta_upload
from hycloud_core.delta.decision import delta_upload_threshold

rates = st.floats(1e3, 1e10)


def test_known_values():
    # r_c = 100, r_t = 200, gamma = 0.9: threshold = 100*200*0.9 / (200 + 200) = 45
    assert delta_upload_threshold(100, 200, 0.9) == pytest.approx(45.0)
    assert should_delta_upload(44.9, 100, 200, 0.9)
    assert not should_delta_upload(45.0, 100, 200, 0.9)  # strict inequality: a tie uploads directly
    assert not should_delta_upload(45.1, 100, 200, 0.9)


@given(rates, rates, st.floats(0.01, 1.0))
def test_boundary_matches_equal_transfer_times(r_c, r_t, gamma):
    """At the threshold, direct upload (S/r_u) and delta upload (S/r_c + (1-γ)S/r_u + 2S/r_t) tie."""
    r_u = delta_upload_threshold(r_c, r_t, gamma)
    direct = 1 / r_u
    via_delta = 1 / r_c + (1 - gamma) / r_u + 2 / r_t
    assert via_delta == pytest.approx(direct, rel=1e-9)
    assert should_delta_upload(r_u * 0.999, r_c, r_t, gamma)
    assert not should_delta_upload(r_u * 1.001, r_c, r_t, gamma)


def test_no_elimination_never_delta_uploads():
    assert not should_delta_upload(1e-6, 1e9, 1e9, 0.0)
    assert not should_delta_upload(1e-6, 1e9, 1e9, -0.2)


def test_infinite_rates_are_the_limits():
    assert delta_upload_threshold(math.inf, 200, 0.5) == pytest.approx(50)
    assert delta_upload_threshold(100, math.inf, 0.5) == pytest.approx(50)
    assert delta_upload_threshold(1e300, 200, 0.5) == pytest.approx(50)


@pytest.mark.parametrize("args", [(0, 1, 1, 0.5), (1, 0, 1, 0.5), (1, 1, -1, 0.5), (math.nan, 1, 1, 0.5)])
def test_bad_rates_raise(args):
    with pytest.raises(ValueError):
        should_delta_upload(*args)
