"""Unit tests of the scheduler-loop simulator: the KV block pool and the toy model."""

import random

import pytest
import torch

from inferprep.sim.engine import POISON, KVBlockPool, ToyModel


def i64(xs):
    return torch.tensor(xs, dtype=torch.int64)


def call(model, batch, width=None):
    """batch: [(request_id, tokens, start, block_table)]; builds the forward inputs."""
    bs = model.kv_pool.block_size
    ids, toks, pos, slots, qsl = [], [], [], [], [0]
    width = width or max(len(t) for *_, t in batch)
    tables = torch.full((len(batch), width), -1, dtype=torch.int64)
    for row, (rid, tokens, start, table) in enumerate(batch):
        ids.append(rid)
        toks += tokens
        pos += range(start, start + len(tokens))
        slots += [table[p // bs] * bs + p % bs for p in range(start, start + len(tokens))]
        qsl.append(qsl[-1] + len(tokens))
        tables[row, :len(table)] = i64(table)
    return model.forward(ids, i64(toks), i64(pos), i64(qsl), tables, i64(slots))


def test_allocate_lowest_first_none_when_short_and_free_poisons():
    pool = KVBlockPool(4, 2, head_dim=3)
    assert pool.allocate(0) == []
    assert pool.allocate(3) == [0, 1, 2]
    assert pool.allocate(2) is None and pool.num_used == 3      # nothing allocated on None
    pool.k_cache[2:4] = 7.0
    pool.free([1])
    assert pool.num_free_blocks() == 2 and pool.allocate(2) == [1, 3]
    pool.free([0, 1, 2, 3])
    assert torch.all(pool.k_cache == POISON) and pool.num_used == 0 and pool.peak_used == 4


@pytest.mark.parametrize("bad, exc", [([5], ValueError), ([1], ValueError), ([0, 0], ValueError),
                                      ("0", TypeError), ([True], TypeError)])
def test_free_rejects_and_records(bad, exc):
    pool = KVBlockPool(4, 2)
    pool.allocate(1)
    with pytest.raises(exc):
        pool.free(bad)
    assert pool.num_used == 1
    if exc is ValueError:
        assert pool.violations


def test_allocate_rejects_bad_counts():
    pool = KVBlockPool(2, 2)
    with pytest.raises(TypeError):
        pool.allocate(1.0)
    with pytest.raises(ValueError):
        pool.allocate(-1)


def test_pool_call_cap_between_forward_calls():
    pool = KVBlockPool(2, 2)
    pool.max_calls_per_step = 10
    for _ in range(10):
        pool.num_free_blocks()
    with pytest.raises(RuntimeError):
        pool.num_free_blocks()
    assert "never ends" in pool.violations[-1]


def test_chunked_batched_paged_equals_greedy():
    rng = random.Random(0)
    for trial in range(6):
        bs = rng.choice([1, 2, 4, 5])
        pool = KVBlockPool(200, bs)
        model = ToyModel(pool, seed=trial)
        reqs = {f"r{j}": [rng.randrange(64) for _ in range(rng.randint(1, 20))] for j in range(3)}
        want = {rid: model.greedy(p, 8) for rid, p in reqs.items()}
        state = {rid: {"tokens": list(p), "done": 0, "table": [], "out": []} for rid, p in reqs.items()}
        while any(len(s["out"]) < 8 for s in state.values()):
            batch = []
            for rid, s in state.items():
                if len(s["out"]) == 8 or rng.random() < 0.3:
                    continue
                n = rng.randint(1, len(s["tokens"]) - s["done"])
                need = -(-(s["done"] + n) // bs) - len(s["table"])
                s["table"] += pool.allocate(max(need, 0))
                batch.append((rid, s["tokens"][s["done"]:s["done"] + n], s["done"], s["table"], n))
            if not batch:
                continue
            out = call(model, [b[:4] for b in batch])
            assert out.dtype == torch.int64 and out.shape == (len(batch),)
            for (rid, _, _, _, n), tok in zip(batch, out.tolist()):
                s = state[rid]
                s["done"] += n
                if s["done"] == len(s["tokens"]):
                    s["tokens"].append(tok)
                    s["out"].append(tok)
        assert {rid: s["out"] for rid, s in state.items()} == want
        assert not model.violations and not model.stale_reads


def test_record_of_a_forward():
    pool = KVBlockPool(8, 2)
    model = ToyModel(pool)
    a, b = pool.allocate(2), pool.allocate(1)
    call(model, [("a", [1, 2, 3], 0, a), ("b", [4], 0, b)])
    r = model.records[0]
    assert (r.request_ids, r.starts, r.num_tokens, r.blocks_in_use, r.num_running, r.total_tokens) == \
        (["a", "b"], [0, 0], [3, 1], 3, 2, 4)


def _setup():
    pool = KVBlockPool(8, 2)
    model = ToyModel(pool)
    a = pool.allocate(2)
    call(model, [("a", [1, 2, 3], 0, a)])
    return pool, model, a


@pytest.mark.parametrize("case", ["forged-slot", "unallocated", "held-by-other", "gap", "empty", "dtype",
                                  "qsl", "token-range", "dup-id", "short-table", "two-rows-one-new-block"])
def test_forward_refuses_and_records(case):
    pool, model, a = _setup()
    b = pool.allocate(1)
    args = dict(ids=["b"], toks=i64([5]), pos=i64([0]), qsl=i64([0, 1]), tables=i64([b]), slots=i64([b[0] * 2]))
    if case == "forged-slot":
        args["slots"] = i64([a[0] * 2])               # writes into a's block
    elif case == "unallocated":
        args["tables"], args["slots"] = i64([[7]]), i64([14])
    elif case == "held-by-other":
        args["tables"], args["slots"] = i64([[a[1]]]), i64([a[1] * 2])
    elif case == "gap":
        args = dict(ids=["a"], toks=i64([5]), pos=i64([4]), qsl=i64([0, 1]), tables=i64([a + b]), slots=i64([b[0] * 2]))
    elif case == "empty":
        args = dict(ids=[], toks=i64([]), pos=i64([]), qsl=i64([0]), tables=torch.zeros(0, 1, dtype=torch.int64),
                    slots=i64([]))
    elif case == "dtype":
        args["toks"] = torch.tensor([5], dtype=torch.int32)
    elif case == "qsl":
        args["qsl"] = i64([1, 1])
    elif case == "token-range":
        args["toks"] = i64([64])
    elif case == "dup-id":
        args = dict(ids=["b", "b"], toks=i64([5, 6]), pos=i64([0, 0]), qsl=i64([0, 1, 2]), tables=i64([b, b]),
                    slots=i64([b[0] * 2, b[0] * 2]))
    elif case == "two-rows-one-new-block":           # b is allocated but no forward has used it yet
        args = dict(ids=["b", "c"], toks=i64([5, 6]), pos=i64([0, 0]), qsl=i64([0, 1, 2]), tables=i64([b, b]),
                    slots=i64([b[0] * 2, b[0] * 2]))
    elif case == "short-table":
        args = dict(ids=["a"], toks=i64([5, 6]), pos=i64([3, 4]), qsl=i64([0, 2]), tables=i64([a]),
                    slots=i64([a[1] * 2 + 1, 0]))
    with pytest.raises((ValueError, TypeError)):
        model.forward(args["ids"], args["toks"], args["pos"], args["qsl"], args["tables"], args["slots"])
    assert model.violations and len(model.records) == 1


def test_use_after_free_by_another_request_is_refused():
    pool, model, a = _setup()
    pool.free(a)                                      # a's KV is poisoned; its blocks return
    c = pool.allocate(2)
    assert c == a
    call(model, [("c", [9, 9, 9], 0, c)])             # c now holds a's old blocks
    with pytest.raises(ValueError, match="held by request c"):
        call(model, [("a", [4], 3, a + pool.allocate(1))])


def test_resuming_without_recompute_is_a_stale_read():
    pool, model, a = _setup()
    pool.free(a)                                      # preempted: KV gone, blocks poisoned
    a2 = pool.allocate(3)
    out = call(model, [("a", [4], 3, a2)])            # resumes at position 3 as if KV were kept
    assert model.records[-1].stale_reads == 3
    assert "freed or never-written" in model.stale_reads[0]
    good = ToyModel(KVBlockPool(8, 2))
    assert int(out[0]) != good.greedy([1, 2, 3, 4], 1)[0]  # poisoned KV changed the token


def test_recompute_from_zero_is_allowed_and_rebinds():
    pool, model, a = _setup()
    pool.free(a)
    a2 = pool.allocate(2)
    out = call(model, [("a", [1, 2, 3], 0, a2)])
    assert int(out[0]) == model.greedy([1, 2, 3], 1)[0]
    assert not model.violations and not model.stale_reads and model.computed["a"] == 3


def test_forward_call_cap():
    pool = KVBlockPool(8, 2)
    model = ToyModel(pool, max_forward_calls=1)
    a = pool.allocate(1)
    call(model, [("a", [1], 0, a)])
    with pytest.raises(RuntimeError):
        call(model, [("a", [2], 1, a)])
    assert "livelock" in model.violations[-1]
