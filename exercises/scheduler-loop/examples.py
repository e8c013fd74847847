"""Public cases for scheduler-loop: two small workloads with their full expected schedules, and
one ValueError. Run them with ``inferprep grade scheduler-loop your_file.py --public``."""

from inferprep.grading import INPUT_CHECKS, Grading, SubmissionRaised, expect_equal, fail
from inferprep.sim.engine import KVBlockPool, ToyModel

VOCAB = 64


def _host(g: Grading, pool: KVBlockPool, model: ToyModel):
    ph = g.host(pool, ["allocate", "free", "num_free_blocks"],
                {"num_blocks": pool.num_blocks, "block_size": pool.block_size})
    return g.host(model, ["forward"], {"vocab_size": model.vocab_size, "kv_pool": ph})


def _check(g: Grading, cfg: dict, requests: list, seed: int, schedule: list, events: list) -> None:
    """schedule: per forward call (request ids, first positions, chunk sizes, blocks allocated)."""
    g.show_input(config=", ".join(f"{k}={v}" for k, v in cfg.items()),
                 requests="\n".join(f"{rid}: arrives at step {t}, prompt {p}, max_new_tokens {m}"
                                     for t, rid, p, m in requests))
    pool = KVBlockPool(cfg["num_blocks"], cfg["block_size"])
    model = ToyModel(pool, VOCAB, seed, max_forward_calls=100)
    try:
        steps = g.call("run_engine", cfg, requests, _host(g, pool, model), 100)
    except SubmissionRaised:
        if pool.violations or model.violations:
            fail(f"the simulator refused a call: {(pool.violations + model.violations)[0]}")
        raise
    if model.stale_reads:
        fail(f"stale KV read: {model.stale_reads[0]}")
    got = [(r.request_ids, r.starts, r.num_tokens, r.blocks_in_use) for r in model.records]
    g.show_result(_lines(schedule), _lines(got), name="forward calls (request ids, first positions, chunk sizes, "
                  "blocks allocated)")
    for k, (mine, want) in enumerate(zip(got, schedule)):
        if mine != want:
            fail(f"forward call {k}: (request ids, first positions, chunk sizes, blocks allocated) = "
                 f"{mine}, expected {want}")
    expect_equal(len(got), len(schedule), name="number of forward calls")
    for _, rid, prompt, m in requests:
        toks = [t for s in steps for (r, t, _) in s if r == rid]
        expect_equal(toks, model.greedy(prompt, m), name=f"tokens of {rid}")
    expect_equal(steps, events, name="events per step")
    expect_equal(pool.num_used, 0, name="blocks allocated at the end")


def _lines(calls: list) -> str:
    return "\n".join(f"{k}: {c}" for k, c in enumerate(calls)) or "(no forward call)"


def grade(g: Grading) -> None:
    with g.case("victim-newest-first-then-self"):
        # 3 blocks of 2 tokens; A, B, C fill one block each. At the first decode A needs a block:
        # C (newest) is preempted, then B has no block and preempts itself. B, then C, recompute.
        _check(g, {"num_blocks": 3, "block_size": 2, "max_num_batched_tokens": 8, "max_num_seqs": 4},
               [(0, "A", [11, 22], 3), (0, "B", [33, 44], 3), (0, "C", [55, 6], 3)], seed=7,
               schedule=[(["A", "B", "C"], [0, 0, 0], [2, 2, 2], 3), (["A"], [2], [1], 2),
                         (["A"], [3], [1], 2), (["B"], [0], [3], 2), (["B"], [3], [1], 2),
                         (["C"], [0], [3], 2), (["C"], [3], [1], 2)],
               events=[[("A", 44, False), ("B", 37, False), ("C", 31, False)], [("A", 57, False)],
                       [("A", 58, True)], [("B", 37, False)], [("B", 37, True)], [("C", 31, False)],
                       [("C", 21, True)]])
    with g.case("decode-beside-chunked-prefill"):
        # Budget 16: D keeps decoding one token per step while P's 40-token prompt is chunked.
        _check(g, {"num_blocks": 24, "block_size": 4, "max_num_batched_tokens": 16, "max_num_seqs": 4},
               [(0, "D", [1, 2, 3, 4], 6), (1, "P", list(range(40)), 2)], seed=8,
               schedule=[(["D"], [0], [4], 1), (["D", "P"], [4, 0], [1, 15], 6),
                         (["D", "P"], [5, 15], [1, 15], 10), (["D", "P"], [6, 30], [1, 10], 12),
                         (["D", "P"], [7, 40], [1, 1], 13), (["D"], [8], [1], 3)],
               events=[[("D", 32, False)], [("D", 51, False)], [("D", 51, False)],
                       [("D", 32, False), ("P", 41, False)], [("D", 34, False), ("P", 15, True)],
                       [("D", 32, True)]])
    with g.case("rejects-request-larger-than-the-pool", group=INPUT_CHECKS):
        pool = KVBlockPool(2, 4)
        g.raises("ValueError", "run_engine",
                 {"num_blocks": 2, "block_size": 4, "max_num_batched_tokens": 8, "max_num_seqs": 2},
                 [(0, "big", [1, 2, 3, 4, 5, 6, 7], 3)], _host(g, pool, ToyModel(pool, VOCAB, 0)), 10)
