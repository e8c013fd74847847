"""Every schedule the scheduler-loop statement and editorial quote, recomputed by the reference."""

from pathlib import Path

import pytest

from inferprep.grading import load_module
from inferprep.sim.engine import KVBlockPool, ToyModel
from inferprep.wrong_variants import load_variant

ROOT = Path(__file__).resolve().parents[2]
REF = load_module(ROOT / "reference" / "scheduler_loop.py", "_ref_scheduler_loop_figures")
STATEMENT = (ROOT / "exercises" / "scheduler-loop" / "statement.md").read_text()
EDITORIAL = (ROOT / "exercises" / "scheduler-loop" / "editorial.md").read_text()


def run(cfg, requests, seed=0):
    pool = KVBlockPool(cfg["num_blocks"], cfg["block_size"])
    model = ToyModel(pool, 64, seed)
    steps = REF.run_engine(cfg, requests, model, 1000)
    assert not model.violations and not model.stale_reads and pool.num_used == 0
    for _, rid, prompt, m in requests:
        assert [t for s in steps for (r, t, _) in s if r == rid] == model.greedy(prompt, m)
    return model.records, steps


def batch(rec):
    return ", ".join(f"{r} {s}+{n}" for r, s, n in zip(rec.request_ids, rec.starts, rec.num_tokens))


STATEMENT_CFG = dict(num_blocks=3, block_size=2, max_num_batched_tokens=8, max_num_seqs=4)
STATEMENT_REQS = [(0, "A", [11, 22], 3), (0, "B", [33, 44], 3), (0, "C", [55, 6], 3)]


def test_statement_example_rows():
    records, steps = run(STATEMENT_CFG, STATEMENT_REQS)
    assert len(records) == len(steps) == 7
    for k, rec in enumerate(records):
        assert f"| {k} | {batch(rec)} | {rec.blocks_in_use} |" in STATEMENT
    assert "`num_blocks=3, block_size=2, max_num_batched_tokens=8, max_num_seqs=4`" in STATEMENT
    # step 1 is the DOMAIN-NOTES victim test: only A runs; B and C wait, B first
    assert records[1].request_ids == ["A"] and records[3].request_ids == ["B"] and records[5].request_ids == ["C"]


@pytest.mark.parametrize("tokens", [[11, 22], [1, 2]])
def test_statement_schedule_does_not_depend_on_tokens(tokens):
    reqs = [(0, rid, tokens, 3) for rid in "ABC"]
    ref_records, _ = run(STATEMENT_CFG, STATEMENT_REQS)
    records, _ = run(STATEMENT_CFG, reqs, seed=5)
    assert [batch(r) for r in records] == [batch(r) for r in ref_records]


EDITORIAL_CFG = dict(num_blocks=4, block_size=4, max_num_batched_tokens=8, max_num_seqs=3)
EDITORIAL_REQS = [(0, "A", [3, 1, 4, 1, 5, 9], 4), (0, "B", [2, 7, 1, 8, 2], 4), (1, "C", [6, 2, 8], 3)]


def test_editorial_walkthrough_rows():
    records, steps = run(EDITORIAL_CFG, EDITORIAL_REQS)
    assert len(records) == len(steps) == 8
    for k, (rec, events) in enumerate(zip(records, steps)):
        emits = ", ".join(r + (" done" if fin else "") for r, _, fin in events)
        assert f"| {k} | {batch(rec)} | {rec.blocks_in_use} | {emits} |" in EDITORIAL
    assert "`num_blocks=4, block_size=4, max_num_batched_tokens=8, max_num_seqs=3`" in EDITORIAL


def test_editorial_totals():
    records, steps = run(EDITORIAL_CFG, EDITORIAL_REQS)
    computed = sum(r.total_tokens for r in records)
    # B computed positions 0..5 before its preemption at step 3, then recomputed them.
    first_life = sum(n for r in records[:3] for rid, n in zip(r.request_ids, r.num_tokens) if rid == "B")
    generated = sum(len(s) for s in steps)
    assert (computed, first_life, generated, len(steps)) == (28, 6, 11, 8)
    assert "28 tokens in 8 steps; 6 of them are B's recomputation. The 11 generated" in EDITORIAL


def test_quoted_limits():
    grader = load_module(ROOT / "graders" / "scheduler_loop.py", "_grader_scheduler_loop_figures")
    assert KVBlockPool(1, 1).max_calls_per_step == 1000
    assert "more than\n1,000 pool calls" in STATEMENT and "after 1,000." in EDITORIAL
    assert grader.VOCAB == 64 and "| `model.vocab_size` | int (64) |" in STATEMENT


def _scenario(name):
    grader = load_module(ROOT / "graders" / "scheduler_loop.py", "_grader_scheduler_loop_scenarios")
    cfg, reqs = next((c, r) for n, c, r in grader.SCENARIOS if n == name)
    return run(cfg, reqs, seed=len(name))


def test_hidden_scenarios_do_what_their_comments_say():
    records, _ = _scenario("victim-newest-first-then-self")       # DOMAIN-NOTES 1, victim test
    assert [r.request_ids for r in records[:6]] == [["A", "B", "C"], ["A"], ["A"], ["B"], ["B"], ["C"]]
    records, _ = _scenario("i7-one-yields-other-decodes")         # I7: B yields, A decodes 1
    assert (records[1].request_ids, records[1].num_tokens, records[1].blocks_in_use) == (["A"], [1], 3)
    records, _ = _scenario("i8-decode-beside-chunked-prefill")    # I8: D 1 + P 15 per step
    assert [(r.request_ids, r.num_tokens) for r in records[1:5]] == [(["D", "P"], [1, 15])] * 4
    assert sum(r.num_tokens[1] for r in records[1:5]) == 60
    records, _ = _scenario("i6-pool-drains-then-full-size-request")  # I6: pool empty between requests
    full = [r for r in records if r.request_ids == ["full"]]
    assert full[-1].blocks_in_use == 8
    assert all(r.blocks_in_use <= 3 for r in records if "full" not in r.request_ids)
    records, _ = _scenario("self-preemption-blocks-admission")   # B preempts only itself: A alone
    assert records[1].request_ids == ["A"] and records[2].request_ids == ["A", "B"]


@pytest.mark.parametrize("seed", range(6))
def test_editorial_invariant_running_then_waiting_is_arrival_order(seed):
    grader = load_module(ROOT / "graders" / "scheduler_loop.py", "_grader_scheduler_loop_invariant")
    cfg = dict(num_blocks=8, block_size=2, max_num_batched_tokens=6, max_num_seqs=4)
    reqs = sorted(grader.random_workload(seed, 8, 8, 2, 8, 6, 6), key=lambda r: r[0])
    order = [rid for _, rid, _, _ in reqs]
    pool = KVBlockPool(8, 2)
    model = ToyModel(pool, 64, seed)
    sched = REF.Scheduler(**cfg)
    i = preemptions = 0
    for step in range(500):
        while i < len(reqs) and reqs[i][0] <= step:
            sched.add_request(*reqs[i][1:])
            i += 1
        sched.step(model)
        live = [r.request_id for r in sched.running] + [r.request_id for r in sched.waiting]
        assert live == [rid for rid in order if rid in set(live)]
        preemptions += sum(1 for r in sched.waiting if r.num_output_tokens > 0)
        if i == len(reqs) and not sched.has_unfinished():
            break
    assert not sched.has_unfinished() and preemptions > 0   # the workload does exercise preemption


def test_editorial_step_3_free_blocks():
    """Step 3 of the walkthrough: 1 block free at admission (B's 2 came back, A took one), C needs 1,
    B at the head needs 2, and 4 are free after A finishes."""
    pool = KVBlockPool(EDITORIAL_CFG["num_blocks"], EDITORIAL_CFG["block_size"])
    model = ToyModel(pool, 64, 0)
    free_at_forward, free_after = [], []
    forward = model.forward

    def counting_forward(*args):
        free_at_forward.append(pool.num_free_blocks())
        return forward(*args)

    model.forward = counting_forward
    sched = REF.Scheduler(**EDITORIAL_CFG)
    reqs, i = sorted(EDITORIAL_REQS, key=lambda r: r[0]), 0
    for step in range(8):
        while i < len(reqs) and reqs[i][0] <= step:
            sched.add_request(*reqs[i][1:])
            i += 1
        if step == 3:
            waiting_before = [r.request_id for r in sched.waiting]
        sched.step(model)
        free_after.append(pool.num_free_blocks())
        if step == 3:
            waiting = [(r.request_id, len(r.token_ids)) for r in sched.waiting]
    assert waiting_before == ["C"] and [rid for rid, _ in waiting] == ["B", "C"]
    assert model.records[3].request_ids == ["A"]       # nothing admitted: the forward's free count
    assert free_at_forward[3] == 1 and free_after[3] == 4   # is the count at admission
    need = {rid: -(-n // EDITORIAL_CFG["block_size"]) for rid, n in waiting}
    assert need == {"B": 2, "C": 1}                     # B recomputes 5 + 2 tokens, C has 3
    budget_left = EDITORIAL_CFG["max_num_batched_tokens"] - 1
    assert waiting[0][1] == budget_left == 7   # B's whole recompute fits the budget
    for fig in ("**1 block is free**", "**1 block**", "**2 blocks**", "**4 blocks are free**"):
        assert fig in EDITORIAL
    assert "3 blocks are now free" not in EDITORIAL


def test_editorial_step_3_fcfs_alone_admits_nobody():
    """Admitting in a step that preempted (the known-wrong variant) gives the same schedule here:
    B at the head does not fit, and FCFS stops there."""
    wrong = load_variant("scheduler_loop", "admit_after_preemption",
                        "_wrong_admit_after_preemption_figures")
    records, _ = run(EDITORIAL_CFG, EDITORIAL_REQS)
    pool = KVBlockPool(EDITORIAL_CFG["num_blocks"], EDITORIAL_CFG["block_size"])
    model = ToyModel(pool, 64, 0)
    wrong.run_engine(EDITORIAL_CFG, EDITORIAL_REQS, model, 1000)
    assert [batch(r) for r in model.records] == [batch(r) for r in records]
