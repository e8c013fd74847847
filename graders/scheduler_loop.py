"""Hidden grader for scheduler-loop.

The toy model and the KV block pool live here (trusted); the submission's ``run_engine`` drives
its ``Scheduler`` in the sandbox against proxies of them. Checked per case: forward call by
forward call, in order (the first problem is the root cause), the token budget, the cap on
running requests (requests holding blocks), no stale KV read, the same batch as the reference
(request ids, first positions, chunk sizes) and the same number of blocks allocated; then every
call was accepted (no tampering), the run finished within 3x the reference's steps + 50, every
request's tokens equal unbatched greedy decoding and end with one finished event, no block is
left allocated, and the per-step events equal the reference's.

The hosted model also refuses a block table padded with anything but -1 (the statement's rule).
Input checks (the ValueErrors of ``Scheduler`` and ``add_request``) run last, in their own group;
a ValueError that comes from the simulator refusing a call instead does not count.
"""

from __future__ import annotations

import random

from inferprep.grading import INPUT_CHECKS, Grading, SubmissionRaised, Trial, fail
from inferprep.sim.engine import KVBlockPool, ToyModel

VOCAB = 64


class Model(ToyModel):
    """The toy model, refusing also a block table padded with anything but -1 past the entries a
    row needs (the statement's rule; ``ToyModel`` itself ignores those entries)."""

    def forward(self, request_ids, input_ids, positions, query_start_loc, block_tables, slot_mapping):
        out = super().forward(request_ids, input_ids, positions, query_start_loc, block_tables, slot_mapping)
        bs, pos, q = self.kv_pool.block_size, positions.cpu().tolist(), query_start_loc.cpu().tolist()
        for i, (rid, row) in enumerate(zip(request_ids, block_tables.cpu().tolist())):
            need = pos[q[i + 1] - 1] // bs + 1
            if any(x != -1 for x in row[need:]):
                return self._refuse(ValueError, f"request {rid}: block table entries past the {need} its "
                                    f"positions need must be -1 (padding), got {row[need:]}")
        return out


def host(g: Grading, pool: KVBlockPool, model: ToyModel):
    ph = g.host(pool, ["allocate", "free", "num_free_blocks"],
                {"num_blocks": pool.num_blocks, "block_size": pool.block_size})
    return g.host(model, ["forward"], {"vocab_size": model.vocab_size, "kv_pool": ph})


def _fmt(rec, j: int) -> str:
    return f"{rec.request_ids[j]} x{rec.num_tokens[j]} from position {rec.starts[j]}"


def _batch(rec) -> str:
    # No square brackets: the CLI's table would read "[r4 ...]" as rich markup and drop it.
    return "(" + ", ".join(_fmt(rec, j) for j in range(len(rec.request_ids))) + ")"


def check_run(g: Grading, cfg: dict, requests: list, seed: int) -> None:
    """Run the reference (here, on its own pool and model, no proxies), then the submission on
    the same workload, and check it (see the module docstring)."""
    rpool = KVBlockPool(cfg["num_blocks"], cfg["block_size"])
    rmodel = Model(rpool, VOCAB, seed)
    expected_steps = g.reference().run_engine(cfg, requests, rmodel, 100_000)
    expected_records = rmodel.records
    if rmodel.violations or rmodel.stale_reads or rpool.num_used:
        raise RuntimeError("the reference broke the simulator's rules")
    max_steps = 3 * len(expected_steps) + 50
    pool = KVBlockPool(cfg["num_blocks"], cfg["block_size"])
    model = Model(pool, VOCAB, seed, max_forward_calls=max_steps)
    raised: SubmissionRaised | None = None
    try:
        steps = g.call("run_engine", cfg, requests, host(g, pool, model), max_steps)
    except SubmissionRaised as e:
        raised, steps = e, None
    g.show_input(config=_cfg(cfg)[1:-1], requests=describe_requests(requests))
    g.show_result(schedule(expected_records), schedule(model.records), name="forward calls (batch per call)")
    # Forward calls in order: the first one that breaks a limit or leaves the reference's
    # schedule is the root cause, whatever happened afterwards.
    budget, cap = cfg["max_num_batched_tokens"], cfg["max_num_seqs"]
    for k, mine in enumerate(model.records):
        if mine.total_tokens > budget:
            fail(f"forward call {k}: {mine.total_tokens} tokens {_batch(mine)}, more than "
                 f"max_num_batched_tokens = {budget}")
        if mine.num_running > cap:
            fail(f"forward call {k}: {mine.num_running} requests hold KV blocks (are running), more "
                 f"than max_num_seqs = {cap}")
        if mine.stale_reads:
            first = next(r for r in model.stale_reads if r.startswith(f"forward call {k}:"))
            fail(f"{mine.stale_reads} stale KV read(s) in {first} (a block freed and reused, a "
                 "preempted request resuming without recomputing, or a wrong block table)")
        if k >= len(expected_records):
            fail(f"forward call {k}: the reference finishes this workload in {len(expected_records)} "
                 "forward calls")
        ref = expected_records[k]
        if (mine.request_ids, mine.starts, mine.num_tokens) != (ref.request_ids, ref.starts, ref.num_tokens):
            fail(f"forward call {k}: you ran {_batch(mine)}; {_first_diff(mine, ref)} {_cfg(cfg)}")
        if mine.blocks_in_use != ref.blocks_in_use:
            fail(f"forward call {k}: {mine.blocks_in_use} blocks allocated at the call, the reference "
                 f"has {ref.blocks_in_use} (allocate only what the scheduled tokens need; free on finish "
                 f"and on preemption) {_cfg(cfg)}")
    refused = pool.violations + model.violations
    if refused:
        fail(f"the simulator refused a call: {refused[0]}")
    _check_finished_hold_nothing(pool, model, requests)
    if raised is not None:
        if "not finished after" in str(raised):
            holders = sorted(set(pool.owner.values()))
            fail(f"the requests did not all finish within {max_steps} steps (the reference needs "
                 f"{len(expected_steps)}): a deadlock or livelock? At the end {pool.num_used} of "
                 f"{pool.num_blocks} blocks were allocated, held by {len(holders)} request(s)")
        raise raised
    _check_shape(steps)
    _check_outputs(model, requests, steps)
    if pool.num_used:
        fail(f"{pool.num_used} block(s) still allocated after every request finished (a leak)")
    if len(model.records) != len(expected_records):
        fail(f"{len(model.records)} forward calls, the reference makes {len(expected_records)}")
    if len(steps) != len(expected_steps):
        fail(f"{len(steps)} engine steps, the reference takes {len(expected_steps)}")
    for k, (mine, ref) in enumerate(zip(steps, expected_steps)):
        if [tuple(e) for e in mine] != [tuple(e) for e in ref]:
            fail(f"step {k}: the events (which requests emitted, in which order, finished flags) "
                 "differ from the reference's")


def schedule(records) -> str:
    """One line per forward call: the batch it ran."""
    return "\n".join(f"{k}: {_batch(rec)}" for k, rec in enumerate(records)) or "(no forward call)"


def describe_requests(requests: list) -> str:
    return "\n".join(f"{rid}: arrives at step {t}, prompt {prompt}, max_new_tokens {m}"
                     for t, rid, prompt, m in requests) or "(none)"


def _cfg(cfg: dict) -> str:
    return (f"(num_blocks={cfg['num_blocks']}, block_size={cfg['block_size']}, "
            f"max_num_batched_tokens={cfg['max_num_batched_tokens']}, max_num_seqs={cfg['max_num_seqs']})")


def _first_diff(mine, ref) -> str:
    for j in range(min(len(mine.request_ids), len(ref.request_ids))):
        if (mine.request_ids[j], mine.starts[j], mine.num_tokens[j]) != (ref.request_ids[j], ref.starts[j], ref.num_tokens[j]):
            return f"batch entry {j} should be {_fmt(ref, j)}"
    if len(mine.request_ids) > len(ref.request_ids):
        return f"the reference schedules only the first {len(ref.request_ids)} of these"
    return f"the reference also schedules {_fmt(ref, len(mine.request_ids))}"


def _check_finished_hold_nothing(pool: KVBlockPool, model: ToyModel, requests: list) -> None:
    """A request whose last token has been computed (KV for len(prompt) + max_new_tokens - 1
    positions) is finished and must hold no block, whether or not the run completed."""
    kv_total = {rid: len(prompt) + m - 1 for _, rid, prompt, m in requests}
    held: dict[str, list[int]] = {}
    for blk, rid in pool.owner.items():
        if rid in kv_total and model.computed.get(rid, 0) >= kv_total[rid] and blk in pool.allocated:
            held.setdefault(rid, []).append(blk)
    if held:
        rid = sorted(held)[0]
        fail(f"request {rid} has finished but still holds {len(held[rid])} block(s) (free a request's "
             f"blocks in the step that emits its last token); {len(held)} finished request(s) leak")


def _check_shape(steps) -> None:
    msg = "run_engine must return one list per step of (request_id: str, token: int, finished: bool) tuples"
    if not isinstance(steps, list):
        fail(msg)
    for s in steps:
        if not isinstance(s, list):
            fail(msg)
        for e in s:
            if not (isinstance(e, (tuple, list)) and len(e) == 3 and isinstance(e[0], str)
                    and isinstance(e[1], int) and not isinstance(e[1], bool) and isinstance(e[2], bool)):
                fail(msg + f"; got {str(e)[:60]}")


def _check_outputs(model: ToyModel, requests: list, steps: list) -> None:
    want = {rid: (prompt, m) for _, rid, prompt, m in requests}
    got: dict[str, list[int]] = {rid: [] for rid in want}
    done: dict[str, int] = {}
    for k, s in enumerate(steps):
        for rid, tok, fin in s:
            if rid not in got:
                fail(f"step {k}: an event for unknown request {rid!r}")
            if rid in done:
                fail(f"step {k}: request {rid} emitted after its finished event")
            got[rid].append(tok)
            if fin:
                done[rid] = k
    for rid, (prompt, m) in want.items():
        toks = got[rid]
        if len(toks) != m:
            fail(f"request {rid}: {len(toks)} tokens streamed, max_new_tokens = {m}")
        if rid not in done:
            fail(f"request {rid}: no event has finished=True")
        greedy = model.greedy(prompt, m)
        bad = next((i for i, (a, b) in enumerate(zip(toks, greedy)) if a != b), None)
        if bad is not None:
            fail(f"request {rid}: generated token {bad} differs from unbatched greedy decoding "
                 "(the KV it attended over was not its own?)")


# -- workloads -----------------------------------------------------------------------------------
def random_workload(seed: int, n: int, num_blocks: int, block_size: int, max_prompt: int,
                    max_new: int, spread: int) -> list:
    r = random.Random(seed)
    out = []
    for j in range(n):
        while True:
            p, m = r.randint(1, max_prompt), r.randint(1, max_new)
            if -(-(p + m - 1) // block_size) <= num_blocks:
                break
        out.append((r.randint(0, spread), f"r{j}", [r.randrange(VOCAB) for _ in range(p)], m))
    return out


def prompt(seed: int, n: int) -> list[int]:
    r = random.Random(seed)
    return [r.randrange(VOCAB) for _ in range(n)]


def cfg(num_blocks, block_size, budget, seqs) -> dict:
    return {"num_blocks": num_blocks, "block_size": block_size, "max_num_batched_tokens": budget,
            "max_num_seqs": seqs}


def counterexample(g: Grading, trial: Trial) -> None:
    """A small fresh workload (trial.size + 1 requests, short prompts) on a small pool, with a tight
    token budget and sequence cap drawn at random, run through the same checks as a hidden case."""
    r = trial.rng
    c = cfg(r.randint(2, 8), r.choice([1, 2, 4]), r.randint(1, 16), r.randint(1, 4))
    n = trial.size + 1
    requests = random_workload(r.randrange(1 << 30), n, c["num_blocks"], c["block_size"],
                               max_prompt=2 + 2 * trial.size, max_new=1 + trial.size, spread=n)
    check_run(g, c, requests, seed=r.randrange(1 << 30))


# (name, config, workload)
SCENARIOS = [
    # DOMAIN-NOTES 1, "victim": 3 blocks of 2, A, B, C each fill one; at the first decode A
    # preempts C, then B preempts itself; B then C return at the head of the queue.
    ("victim-newest-first-then-self", cfg(3, 2, 8, 4),
     [(0, "A", prompt(1, 2), 3), (0, "B", prompt(2, 2), 3), (0, "C", prompt(3, 2), 3)]),
    # I7 (mistral.rs #2043): 4 blocks of 4, two 8-token sequences both need a 9th token.
    ("i7-one-yields-other-decodes", cfg(4, 4, 32, 4),
     [(0, "A", prompt(4, 8), 6), (0, "B", prompt(5, 8), 6)]),
    # I8 (ATOM #1835): budget 16, a decoding request must get its token while a 64-token
    # prompt prefills in 15-token chunks.
    ("i8-decode-beside-chunked-prefill", cfg(48, 4, 16, 4),
     [(0, "D", prompt(6, 4), 10), (1, "P", prompt(7, 64), 4)]),
    # I6 (xLLM #828), without a prefix cache: three 12-token requests one after another, then
    # one needing all 8 blocks must be admitted.
    ("i6-pool-drains-then-full-size-request", cfg(8, 4, 16, 4),
     [(0, "a", prompt(8, 9), 4), (8, "b", prompt(9, 9), 4), (16, "c", prompt(10, 9), 4),
      (24, "full", prompt(11, 29), 4)]),
    # B preempts itself (the only preemption of the step): nobody may be admitted, not even B.
    ("self-preemption-blocks-admission", cfg(3, 4, 9, 4),
     [(0, "A", prompt(26, 1), 4), (0, "B", prompt(27, 8), 3), (1, "C", prompt(28, 2), 2)]),
    ("exact-fit-accepted", cfg(5, 4, 8, 2),
     [(0, "x", prompt(12, 13), 8), (0, "y", prompt(13, 3), 2)]),
    ("budget-1", cfg(12, 4, 1, 3),
     [(0, "a", prompt(14, 3), 3), (0, "b", prompt(15, 2), 2), (1, "c", prompt(16, 1), 2)]),
    ("block-size-1", cfg(10, 1, 6, 3), random_workload(17, 5, 10, 1, 6, 5, 3)),
    ("one-token-prompts-and-max-new-1", cfg(4, 2, 4, 4),
     [(0, "a", [5], 1), (0, "b", [7], 3), (1, "c", [9, 1], 1), (1, "d", [3], 4)]),
    ("prompts-fill-whole-blocks", cfg(6, 4, 32, 4),
     [(0, "a", prompt(18, 8), 5), (0, "b", prompt(19, 4), 5), (0, "c", prompt(20, 4), 6)]),
    ("sequence-cap-2", cfg(32, 4, 64, 2), random_workload(21, 6, 32, 4, 12, 6, 2)),
    ("idle-gaps-between-arrivals", cfg(8, 4, 8, 4),
     [(0, "a", prompt(22, 5), 2), (9, "b", prompt(23, 6), 3), (9, "c", prompt(24, 2), 2), (20, "d", [1], 1)]),
    ("long-prompts-small-budget", cfg(20, 4, 7, 4), random_workload(25, 5, 20, 4, 40, 6, 4)),
]

RANDOM = [  # (seed, config, n requests, max prompt, max new, arrival spread)
    (100, cfg(12, 4, 16, 4), 8, 30, 12, 10),
    (101, cfg(10, 2, 12, 6), 10, 10, 8, 6),
    (102, cfg(24, 8, 32, 8), 10, 60, 20, 12),
    (103, cfg(16, 4, 24, 3), 9, 25, 15, 5),
    (104, cfg(6, 4, 10, 5), 8, 12, 10, 8),
    (105, cfg(40, 4, 48, 16), 14, 40, 12, 4),
]


def grade(g: Grading) -> None:
    for name, c, reqs in SCENARIOS:
        with g.case(name):
            check_run(g, c, reqs, seed=len(name))
    for seed, c, n, mp, mn, spread in RANDOM:
        with g.case(f"random-{seed}-blocks{c['num_blocks']}x{c['block_size']}-budget{c['max_num_batched_tokens']}"):
            check_run(g, c, random_workload(seed, n, c["num_blocks"], c["block_size"], mp, mn, spread), seed)

    base = cfg(4, 4, 16, 2)
    with g.case("no-requests"):
        check_run(g, base, [], seed=0)
    with g.case("accepts-kv-exactly-the-pool"):
        check_run(g, base, [(0, "fits", prompt(31, 13), 4)], seed=31)  # 16 tokens = 4 blocks

    # Input checks last: a child that dies in one stops every later case. The ValueError must come
    # from add_request: a scheduler that takes the request and then makes a call the simulator
    # refuses (a 0-token chunk, a negative token id, a forward with nothing to run), or fails on
    # an empty step once the request cannot fit, raises one too.
    bad_requests = {
        "rejects-kv-one-token-over-the-pool": [(0, "big", prompt(30, 14), 4)],  # 17 tokens > 16
        "rejects-empty-prompt": [(0, "e", [], 3)],
        "rejects-max-new-tokens-0": [(0, "z", [1, 2], 0)],
        "rejects-duplicate-request-id": [(0, "d", [1], 2), (0, "d", [2], 2)],
        "rejects-negative-token-id": [(0, "n", [3, -1], 2)],
        "rejects-id-reused-after-it-finished": [(0, "d", [1], 1), (4, "d", [2], 1)],
    }
    for name, reqs in bad_requests.items():
        with g.case(name, group=INPUT_CHECKS):
            pool = KVBlockPool(4, 4)
            model = Model(pool, VOCAB, 0)
            g.raises("ValueError", "run_engine", base, reqs, host(g, pool, model), 50)
            refused = pool.violations + model.violations
            if refused:
                fail(f"the ValueError came from the simulator refusing a call ({refused[0]}), not from "
                     "add_request")
            calls = 1 if name == "rejects-id-reused-after-it-finished" else 0   # "d" runs once first
            if len(model.records) > calls:
                fail(f"the request was accepted and run ({len(model.records)} forward calls) before the "
                     "ValueError: add_request must refuse it")
    with g.case("rejects-bad-config", group=INPUT_CHECKS):
        for args in ((0, 4, 16, 2), (4, 0, 16, 2), (4, 4, 0, 2), (4, 4, 16, 0)):
            g.raises("ValueError", "Scheduler", *args)
