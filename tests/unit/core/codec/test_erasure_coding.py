"""RS(n, k) coding: any k of n framed blocks rebuild the chunk; bad blocks are skipped."""

import io
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core.codec.erasure import (
    choose_params,
    decode_chunk,
    decode_stream,
    encode_chunk,
    encode_stream,
)
from hycloud_core.codec.erasure_errors import (
    InconsistentBlocksError,
    NotEnoughBlocksError,
)
from hycloud_core.codec.framing import HEADER_SIZE, parse_block_header

CODES = [(3, 2), (4, 2), (4, 3), (5, 3), (6, 4), (7, 2), (2, 1), (1, 1)]


@settings(max_examples=40, deadline=None)
@given(code=st.sampled_from(CODES), data=st.data())
def test_every_k_subset_decodes(code, data):
    n, k = code
    chunk = data.draw(
        st.binary(min_size=0, max_size=0) | st.binary(max_size=3 * k) | st.binary(max_size=5000)
    )
    blocks = encode_chunk(chunk, 3, n, k)
    assert len(blocks) == n
    for subset in itertools.combinations(range(n), k):
        assert decode_chunk(blocks[i] for i in subset) == chunk


@settings(max_examples=20, deadline=None)
@given(code=st.sampled_from(CODES), data=st.data())
def test_subset_order_and_duplicates_do_not_matter(code, data):
    n, k = code
    chunk = data.draw(st.binary(max_size=2000))
    blocks = encode_chunk(chunk, 0, n, k)
    picked = data.draw(st.permutations(range(n)))[:k]
    with_dupes = [blocks[picked[0]]] * 3 + [blocks[i] for i in picked]
    assert decode_chunk(with_dupes) == chunk


@settings(max_examples=40, deadline=None)
@given(code=st.sampled_from([c for c in CODES if c[0] > c[1]]), data=st.data())
def test_flipped_byte_is_detected_and_block_skipped(code, data):
    n, k = code
    chunk = data.draw(st.binary(min_size=1, max_size=4000))
    blocks = encode_chunk(chunk, 1, n, k)
    bad = data.draw(st.integers(0, n - 1))
    pos = data.draw(st.integers(0, len(blocks[bad]) - 1))
    damaged = bytearray(blocks[bad])
    damaged[pos] ^= data.draw(st.integers(1, 255))
    others = [b for i, b in enumerate(blocks) if i != bad]
    # the damaged block first, then exactly k good ones: decode must skip it
    assert decode_chunk([bytes(damaged)] + others[:k]) == chunk
    # the damaged block with only k - 1 good ones: a clear failure, not garbage
    with pytest.raises(NotEnoughBlocksError) as err:
        decode_chunk([bytes(damaged)] + others[: k - 1])
    assert err.value.good == k - 1 and err.value.rejected == 1
    assert err.value.needed == (k if k > 1 else None)


@pytest.mark.parametrize("cut", [0, 3, HEADER_SIZE - 1, HEADER_SIZE, HEADER_SIZE + 5])
def test_truncated_blocks_are_rejected(cut):
    chunk = bytes(range(256)) * 4
    blocks = encode_chunk(chunk, 0, 3, 2)
    with pytest.raises(NotEnoughBlocksError):
        decode_chunk([blocks[0][:cut], blocks[1]])
    assert decode_chunk([blocks[0][:cut], blocks[1], blocks[2]]) == chunk


def test_replication_when_fewer_than_three_instances():
    chunk = b"replicated chunk" * 100
    for instances in (1, 2):
        n, k = choose_params(instances)
        assert (n, k) == (instances, 1)
        blocks = encode_chunk(chunk, 0, n, k)
        assert all(b[HEADER_SIZE:] == chunk for b in blocks)
        for block in blocks:
            assert decode_chunk([block]) == chunk


@pytest.mark.parametrize("instances", range(3, 12))
def test_choose_params_meets_paper_constraints(instances):
    n, k = choose_params(instances)
    assert 3 <= n <= instances and 2 <= k < n
    assert choose_params(instances, max_n=3) == (3, 2)


def test_choose_params_rejects_no_instances():
    with pytest.raises(ValueError):
        choose_params(0)


def test_blocks_of_different_chunks_do_not_mix():
    a = encode_chunk(b"a" * 300, 0, 3, 2)
    b = encode_chunk(b"b" * 300, 0, 3, 2)
    with pytest.raises(NotEnoughBlocksError):
        decode_chunk([a[0], b[1]])
    assert decode_chunk([a[0], b[1], a[2]]) == b"a" * 300


def test_expected_digest_rejects_stale_version():
    old = encode_chunk(b"old" * 100, 0, 3, 2)
    new = encode_chunk(b"new" * 100, 0, 3, 2)
    want = parse_block_header(new[0]).chunk_digest
    assert decode_chunk(old[:2] + new[1:], expect_digest=want) == b"new" * 100


def test_headers_describe_each_block():
    chunk = b"x" * 1001
    blocks = encode_chunk(chunk, 42, 5, 3)
    for i, block in enumerate(blocks):
        h = parse_block_header(block)
        assert (h.n, h.k, h.block_index, h.chunk_index) == (5, 3, i, 42)
        assert (h.chunk_length, h.padding, h.payload_length) == (1001, 1, 334)
        assert len(block) == HEADER_SIZE + 334


def test_decode_stops_reading_at_k_good_blocks():
    blocks = encode_chunk(b"lazy" * 500, 0, 5, 3)
    consumed = []

    def source():
        for b in blocks:
            consumed.append(b)
            yield b

    decode_chunk(source())
    assert len(consumed) == 3


@settings(max_examples=15, deadline=None)
@given(
    size=st.integers(0, 5000),
    chunk_size=st.integers(1, 1500),
    code=st.sampled_from([(3, 2), (5, 3), (2, 1)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_stream_round_trip_from_mixed_subsets(size, chunk_size, code, seed):
    import random

    rng = random.Random(seed)
    payload = rng.randbytes(size)
    n, k = code
    chunks = list(encode_stream(io.BytesIO(payload), n, k, chunk_size))
    assert len(chunks) == -(-size // chunk_size)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    out = io.BytesIO()
    written = decode_stream((rng.sample(c.blocks, k) for c in chunks), out)
    assert written == size and out.getvalue() == payload


def test_stream_reads_past_short_reads():
    class Trickle(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self.data = data

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1) -> bytes:
            piece, self.data = self.data[: min(size, 7)], self.data[min(size, 7) :]
            return piece

    payload = bytes(range(256)) * 10
    chunks = list(encode_stream(Trickle(payload), 3, 2, chunk_size=1000))
    assert [c.length for c in chunks] == [1000, 1000, 560]


def test_stream_rejects_chunks_out_of_order():
    chunks = list(encode_stream(io.BytesIO(b"z" * 3000), 3, 2, chunk_size=1000))
    with pytest.raises(InconsistentBlocksError):
        decode_stream([chunks[1].blocks, chunks[0].blocks], io.BytesIO())
