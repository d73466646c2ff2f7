import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.delta import (
    CANDIDATE_SIZES,
    AdaptiveChunkSize,
    ChangeAwareChunkSize,
    GammaMode,
    TrafficSample,
    signature_bytes,
)
from hycloud_core.delta.adaptive import DEFAULT_INITIAL, measure_bytes

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


def test_change_aware_keeps_one_vector_per_kind_of_change():
    state = ChangeAwareChunkSize()
    small, large = (1_000_000, 1_000_050), (1_000_000, 1_050_000)
    assert state.choose(*small) == state.initial and state.choose(*large) == state.initial
    state.learn(_samples(4096), *small)
    state.learn(_samples(512), *large)
    assert state.choose(*small) == 4096 and state.choose(*large) == 512
    again = ChangeAwareChunkSize.from_dict(json.loads(json.dumps(state.to_dict())))
    assert again.choose(*small) == 4096 and again.choose(*large) == 512


def test_change_aware_starts_from_a_plain_vector():
    plain = AdaptiveChunkSize()
    plain.observe(_samples(2048))
    state = ChangeAwareChunkSize.from_dict(plain.to_dict())
    assert state.choose(1_000_000, 1_200_000) == 2048
