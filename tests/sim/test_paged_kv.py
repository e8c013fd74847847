"""Unit tests of the paged KV simulator (inferprep.sim.paged_kv): pool bookkeeping, the model's
numbers (paged == non-paged, bitwise), and every illegal operation it must catch."""

import math

import pytest
import torch

from inferprep.sim.paged_kv import BlockPool, ToyLM


def make(num_blocks=32, block_size=4, vocab=10, seed=0, **kw):
    pool = BlockPool(num_blocks, block_size, 8, seed=seed)
    return pool, ToyLM(pool, vocab, seed=seed, **kw)


def slots_of(table, start, stop, bs):
    return [table[p // bs] * bs + p % bs for p in range(start, stop)]


def prefill(pool, model, tokens):
    bs = pool.block_size
    table = pool.allocate(-(-len(tokens) // bs))
    lp = model.forward([tokens], [slots_of(table, 0, len(tokens), bs)], [table], [len(tokens)])
    return table, lp[0]


# -- pool -------------------------------------------------------------------------------------

def test_allocate_free_counts_peak_and_fifo_reuse():
    pool = BlockPool(6, 4, 8, seed=1)
    a = pool.allocate(4)
    assert len(set(a)) == 4 and all(0 <= b < 6 for b in a)
    assert (pool.num_used, pool.peak_used, pool.num_free_blocks()) == (4, 4, 2)
    pool.free(a[1])
    pool.free([a[0], a[2]])
    assert (pool.num_used, pool.peak_used, pool.num_free_blocks()) == (1, 4, 5)
    rest = pool.allocate(2)          # the two never-used blocks come before the freed ones
    assert not set(rest) & set(a)
    assert pool.allocate(1) == [a[1]]
    assert pool.allocate(0) == []
    assert pool.peak_used == 4 and not pool.violations


def test_allocate_too_many_is_atomic():
    pool = BlockPool(3, 2, 8)
    pool.allocate(2)
    with pytest.raises(RuntimeError, match="out of KV cache blocks"):
        pool.allocate(2)
    assert pool.num_used == 2 and pool.num_free_blocks() == 1
    with pytest.raises(ValueError):
        pool.allocate(-1)
    with pytest.raises(TypeError):
        pool.allocate(1.0)


@pytest.mark.parametrize("ids", [lambda a: [a[0], a[0]], lambda a: [a[0] + 100], lambda a: a + [-1]])
def test_bad_free_is_recorded_and_changes_nothing(ids):
    pool = BlockPool(4, 2, 8)
    a = pool.allocate(2)
    with pytest.raises(ValueError):
        pool.free(ids(a))
    assert pool.num_used == 2 and len(pool.violations) == 1


def test_double_free_across_calls():
    pool = BlockPool(4, 2, 8)
    (b,) = pool.allocate(1)
    pool.free(b)
    with pytest.raises(ValueError, match="not allocated"):
        pool.free([b])
    assert pool.violations


def test_free_poisons_and_copy_copies_kv_and_written_flags():
    pool, model = make()
    table, _ = prefill(pool, model, [1, 2, 3, 4, 5, 6])
    (dst,) = pool.allocate(1)
    pool.copy(table[1], dst)
    assert torch.equal(pool.kv[dst].nan_to_num(7.0), pool.kv[table[1]].nan_to_num(7.0))
    assert pool.written[dst].tolist() == [True, True, False, False]
    pool.free(table[1])
    assert torch.isnan(pool.kv[table[1]]).all() and not pool.written[table[1]].any()
    with pytest.raises(ValueError, match="use after free"):
        pool.copy(table[1], dst)
    with pytest.raises(ValueError):
        pool.copy([table[0]], [table[0]])


# -- model numbers ----------------------------------------------------------------------------

def test_forward_equals_non_paged_bitwise_and_is_quantized():
    pool, model = make(block_size=3, vocab=12)
    toks = [3, 1, 4, 1, 5, 9, 2]
    _, lp = prefill(pool, model, toks)
    assert lp.dtype == torch.float64 and lp.shape == (12,)
    assert torch.equal(lp, model.reference_logprobs(toks))
    assert torch.equal(lp, torch.round(lp * 2**20) / 2**20)
    assert math.isclose(float(lp.exp().sum()), 1.0, abs_tol=1e-4)


def test_chunked_prefill_and_batched_decode_match_bitwise():
    pool, model = make(block_size=4, vocab=10)
    bs = 4
    toks = [1, 2, 3, 4, 5, 6, 7]
    table = pool.allocate(2)
    model.forward([toks[:3]], [slots_of(table, 0, 3, bs)], [table], [3])
    lp = model.forward([toks[3:]], [slots_of(table, 3, 7, bs)], [table], [7])[0]
    assert torch.equal(lp, model.reference_logprobs(toks))
    # two beams forked from it, each with a private copy of the partial block, one batched call
    (c,) = pool.allocate(1)
    pool.copy(table[1], c)
    t2 = [table[0], c]
    out = model.forward(torch.tensor([[8], [9]]), torch.tensor([[table[1] * bs + 3], [c * bs + 3]]),
                        torch.tensor([table, t2]), torch.tensor([8, 8]))
    assert torch.equal(out[0], model.reference_logprobs(toks + [8]))
    assert torch.equal(out[1], model.reference_logprobs(toks + [9]))
    assert model.num_tokens_processed == 9 and not pool.violations


def test_context_matters_and_twins_tie():
    pool, model = make(vocab=6, token_classes=[0, 1, 2, 1, 3, 4])
    a = model.reference_logprobs([0, 1, 2, 5])
    b = model.reference_logprobs([0, 3, 2, 5])     # 1 and 3 are twins
    c = model.reference_logprobs([0, 4, 2, 5])
    assert torch.equal(a, b) and a[1] == a[3]
    assert (a - c).abs().max() > 1e-3


def test_block_table_padding_ignored_and_types_checked():
    pool, model = make()
    table = pool.allocate(1)
    out = model.forward([[1, 2]], [slots_of(table, 0, 2, 4)], [table + [-1, 999]], [2])
    assert out.shape == (1, 10)
    with pytest.raises(TypeError):
        model.forward([[1.0]], [[0]], [table], [1])
    with pytest.raises(ValueError):
        model.forward([[1]], [[0, 1]], [table], [1])
    with pytest.raises(ValueError):
        model.forward([[10]], [[table[0] * 4 + 2]], [table], [3])


# -- illegal operations -----------------------------------------------------------------------

def test_use_after_free_is_caught():
    pool, model = make()
    table, _ = prefill(pool, model, [1, 2, 3, 4, 5])
    pool.free(table[0])
    with pytest.raises(ValueError, match="not allocated"):
        model.forward([[6]], [[table[1] * 4 + 1]], [table], [6])
    assert pool.violations


def test_reading_an_unwritten_slot_is_caught():
    pool, model = make()
    table, _ = prefill(pool, model, [1, 2, 3, 4, 5])
    (fresh,) = pool.allocate(1)                     # copy-on-write without the copy
    with pytest.raises(ValueError, match="holds no KV"):
        model.forward([[6]], [[fresh * 4 + 1]], [[table[0], fresh]], [6])


def test_shared_block_written_in_place_is_caught():
    pool, model = make()
    table, _ = prefill(pool, model, [1, 2, 3, 4, 5])
    slot = table[1] * 4 + 1
    with pytest.raises(ValueError, match="two tokens"):
        model.forward([[6], [7]], [[slot], [slot]], [table, table], [6, 6])
    model.forward([[6]], [[slot]], [table], [6])
    with pytest.raises(ValueError, match="overwrites"):
        model.forward([[7]], [[slot]], [table], [6])
    assert len(pool.violations) == 2


def test_slot_outside_the_block_table_is_caught():
    pool, model = make()
    table, _ = prefill(pool, model, [1, 2, 3, 4, 5])
    (other,) = pool.allocate(1)
    with pytest.raises(ValueError, match="slot_mapping"):
        model.forward([[6]], [[other * 4 + 1]], [table], [6])


def test_forged_block_ids_are_caught():
    pool, model = make()
    allocated = set(pool.allocate(3))
    forged = next(b for b in range(pool.num_blocks) if b not in allocated)
    with pytest.raises(ValueError, match="not allocated"):
        model.forward([[1, 2]], [[forged * 4, forged * 4 + 1]], [[forged]], [2])
