import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.delta import (
    CANDIDATE_SIZES,
    AdaptiveChunkSize,
    GammaMode,
    PredictiveChunkSize,
    TrafficSample,
    signature_bytes,
)
from hycloud_core.delta.adaptive import DEFAULT_INITIAL, HISTORY, MIN_CHANGE, measure_bytes

K = len(CANDIDATE_SIZES)
gamma_vectors = st.lists(st.floats(0.0, 1.0), min_size=K, max_size=K).filter(lambda g: sum(g) > 0)


@settings(max_examples=100, deadline=None)
@given(st.lists(gamma_vectors, min_size=1, max_size=8))
def test_update_follows_the_blending_formula(history):
    state = AdaptiveChunkSize()
    p = [1.0 / K] * K
    for n, gammas in enumerate(history, start=1):
        local = [g / sum(gammas) for g in gammas]
        lam = n / (n + 1)
        p = [lam * a + (1 - lam) * b for a, b in zip(p, local, strict=True)]
        assert state.update(gammas) == pytest.approx(p)
        assert sum(state.probabilities) == pytest.approx(1.0)
        best = max(range(K), key=lambda i: (p[i], -i))
        assert state.choice == CANDIDATE_SIZES[best]
    assert state.adjustments == len(history)


def test_first_choice_is_the_default_then_history_decides():
    state = AdaptiveChunkSize()
    assert state.choice == DEFAULT_INITIAL
    assert AdaptiveChunkSize(initial=8192).choice == 8192
    gammas = [0.1] * K
    gammas[2] = 0.9
    state.update(gammas)
    assert state.choice == CANDIDATE_SIZES[2]


def test_negative_gammas_count_as_zero_and_all_zero_learns_nothing():
    state = AdaptiveChunkSize()
    before = list(state.probabilities)
    state.update([-0.5] * K)
    assert state.probabilities == pytest.approx(before)
    g = [-1.0] * K
    g[4] = 0.5
    state.update(g)
    assert state.choice == CANDIDATE_SIZES[4]
    assert state.gamma_max == 0.5


def test_state_survives_json():
    state = AdaptiveChunkSize(mode=GammaMode.PAPER, initial=4096)
    state.update([random.Random(1).random() for _ in range(K)])
    again = AdaptiveChunkSize.from_dict(json.loads(json.dumps(state.to_dict())))
    assert again == state
    assert again.choice == state.choice


def test_bad_state_is_rejected():
    good = AdaptiveChunkSize().to_dict()
    with pytest.raises(ValueError):
        AdaptiveChunkSize.from_dict({**good, "version": 99})
    with pytest.raises(ValueError):
        AdaptiveChunkSize.from_dict({**good, "probabilities": [1.0]})
    with pytest.raises(ValueError):
        AdaptiveChunkSize.from_dict({**good, "initial": 1000})


def test_gamma_modes():
    s = TrafficSample(block_size=1024, file_size=1000, signature_bytes=100, delta_bytes=50)
    assert s.gamma(GammaMode.PAPER) == pytest.approx(0.95)
    assert s.gamma(GammaMode.TRAFFIC) == pytest.approx(0.85)
    assert TrafficSample(1024, 0, 10, 10).gamma() == 0.0


def test_measured_samples_are_the_real_signature_and_delta_sizes():
    rng = random.Random(5)
    old = rng.randbytes(40_000)
    new = old[:10_000] + b"changed" + old[10_000:]
    sizes = (256, 1024, 4096)
    samples = measure_bytes(old, new, sizes)
    assert [s.block_size for s in samples] == list(sizes)
    for s in samples:
        assert s.signature_bytes == len(signature_bytes(old, s.block_size))
        assert s.file_size == len(new)
        assert 0 < s.delta_bytes < 5000
    # small chunks: smaller delta, longer checksum list
    assert samples[0].delta_bytes < samples[-1].delta_bytes
    assert samples[0].signature_bytes > samples[-1].signature_bytes


def test_paper_gamma_prefers_small_chunks_traffic_gamma_does_not():
    rng = random.Random(9)
    old = rng.randbytes(300_000)
    new = old[:150_000] + b"x" + old[150_000:]
    samples = measure_bytes(old, new)
    paper, traffic = AdaptiveChunkSize(mode=GammaMode.PAPER), AdaptiveChunkSize(mode=GammaMode.TRAFFIC)
    paper.observe(samples)
    traffic.observe(samples)
    assert paper.choice <= 512
    assert traffic.choice == min(samples, key=lambda s: s.traffic).block_size
    assert traffic.choice > paper.choice


def _samples(best: int) -> list[TrafficSample]:
    """Traffic that is lowest at `best` and grows away from it."""
    return [
        TrafficSample(s, 10_000_000, 1000, 1000 * (1 + abs(s.bit_length() - best.bit_length())))
        for s in CANDIDATE_SIZES
    ]


def _model(size: int, edits: int) -> list[TrafficSample]:
    """Traffic of a file with `edits` scattered edits: list ~ size/c, delta ~ edits·c."""
    return [TrafficSample(c, size, (size // c) * 7, edits * c // 3 + 100) for c in CANDIDATE_SIZES]


def _best(samples: list[TrafficSample]) -> int:
    return min(samples, key=lambda s: s.traffic).block_size


def test_predictive_starts_at_the_initial_size_then_follows_the_change_in_size():
    size = 20_000_000
    state = PredictiveChunkSize()
    assert state.choose(size, size + 10) == DEFAULT_INITIAL
    # history: edits track the size change (~1 edit per 100 bytes of growth)
    for growth in (1_000, 300_000, 2_000, 500_000):
        state.learn(_model(size, growth // 100), size, size + growth)
    assert state.elasticity() == pytest.approx(1.0, abs=0.05)
    for growth in (1_500, 400_000, 40_000):  # the last one is a kind of change not seen before
        want = _best(_model(size, growth // 100))
        assert state.choose(size, size + growth) == want
    assert state.choose(size, size + 1_500) > state.choose(size, size + 400_000)


def test_predictive_ignores_the_change_in_size_when_deltas_do_not_follow_it():
    size = 60_000_000
    state = PredictiveChunkSize()
    for growth in (1_000, 300_000, 2_000, 500_000):
        state.learn(_model(size, 5_000), size, size + growth)  # same edits whatever the growth
    assert state.elasticity() == 0.0
    want = _best(_model(size, 5_000))
    assert {state.choose(size, size + g) for g in (0, 1_000, 1_000_000)} == {want}


sample_lists = st.lists(st.integers(0, 10**7), min_size=2 * K, max_size=2 * K)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 10**8), st.integers(1, 10**8), sample_lists), min_size=1, max_size=12)
)
def test_predicted_traffic_follows_its_definition(history):
    state = PredictiveChunkSize()
    for old, new, numbers in history:
        state.learn(
            [TrafficSample(c, new, numbers[i], numbers[K + i]) for i, c in enumerate(CANDIDATE_SIZES)],
            old,
            new,
        )
    kept = history[-HISTORY:]
    assert len(state.history) == len(kept)
    beta = state.elasticity()
    assert 0.0 <= beta <= 1.0
    old, new = 5_000_000, 5_000_300
    now = abs(new - old) + MIN_CHANGE
    last_old, _, last = kept[-1]
    want = [
        last[i] * old / last_old
        + sum(((now / (abs(n - o) + MIN_CHANGE)) ** beta) * nums[K + i] for o, n, nums in kept) / len(kept)
        for i in range(K)
    ]
    assert state.predict(old, new) == pytest.approx(want)
    assert state.choose(old, new) == CANDIDATE_SIZES[min(range(K), key=lambda i: (want[i], i))]
    again = PredictiveChunkSize.from_dict(json.loads(json.dumps(state.to_dict())))
    assert again.predict(old, new) == pytest.approx(want)


def test_predictive_state_fits_the_link_file_and_refuses_bad_state():
    state = PredictiveChunkSize()
    for n in range(HISTORY + 5):
        state.learn(_model(10**9, 10**6 + n), 10**9, 10**9 + n)
    assert len(state.history) == HISTORY
    assert len(json.dumps(state.to_dict())) < 4_096  # the controller takes up to 16 KiB
    assert state.gamma_max == pytest.approx(max(s.gamma() for s in _model(10**9, 10**6 + HISTORY + 4)))
    # a state written by an older client (a probability vector) starts afresh
    assert PredictiveChunkSize.from_dict(AdaptiveChunkSize().to_dict()).history == []
    bad = state.to_dict()
    bad["history"][0][2] = [1, 2]
    with pytest.raises(ValueError):
        PredictiveChunkSize.from_dict(bad)
    with pytest.raises(ValueError):
        PredictiveChunkSize().learn(_model(1000, 1)[:3], 1000, 1001)
