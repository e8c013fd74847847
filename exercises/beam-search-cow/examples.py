"""Public examples of beam-search-cow (the statement's worked example and two more)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.paged_kv import BlockPool, ToyLM


def _setup(g: Grading, seed: int, vocab: int, block_size: int, **kw):
    g.show_input(model=f"ToyLM, vocab_size={vocab} (its weights stay with the grader)",
                 pool=f"BlockPool of 64 blocks of {block_size} tokens")
    pool = BlockPool(64, block_size, 16, seed=seed)
    model = ToyLM(pool, vocab, seed=seed, **kw)
    handles = (g.host(model, ToyLM.CHILD_METHODS, model.child_attrs()),
               g.host(pool, BlockPool.CHILD_METHODS, pool.child_attrs()))
    return pool, model, handles


def _check(out, want, pool, model, peak, tokens):
    if pool.violations:
        fail(f"illegal KV-cache operation: {pool.violations[0]}")
    if not isinstance(out, (list, tuple)) or not all(isinstance(b, (list, tuple)) and len(b) == 2 for b in out):
        fail("expected a list of (tokens, score) pairs")
    expect_equal([list(t) if isinstance(t, (list, tuple)) else t for t, _ in out], [t for t, _ in want],
                 name="tokens")
    for i, ((_, s), (_, e)) in enumerate(zip(out, want)):
        expect_close(s, e, name=f"score of beam {i}", rtol=0.0, atol=1e-9)
    if pool.num_used:
        fail(f"{pool.num_used} block(s) still allocated on return")
    if pool.peak_used > peak:
        fail(f"peak of {pool.peak_used} blocks; sharing needs {peak}")
    if model.num_tokens_processed > tokens:
        fail(f"{model.num_tokens_processed} tokens through the model; {tokens} are needed")


def grade(g: Grading) -> None:
    with g.case("worked-example"):
        pool, model, h = _setup(g, 7, 8, 4)
        out = g.call("paged_beam_search", *h, [1, 2, 3, 4, 5, 6], 3, 4)
        _check(out, [([7, 2, 2, 7], -2.1607980728149414), ([7, 4, 4, 7], -2.6537675857543945),
                     ([7, 2, 4, 4], -2.8493919372558594)], pool, model, peak=6, tokens=15)

    with g.case("prompt-fills-one-block"):
        pool, model, h = _setup(g, 11, 6, 4)
        out = g.call("paged_beam_search", *h, [5, 1, 2, 3], 4, 3)
        _check(out, [([2, 2, 2], -1.7178497314453125), ([5, 5, 5], -1.8888168334960938),
                     ([1, 5, 5], -2.1079444885253906), ([2, 2, 5], -2.359294891357422)],
               pool, model, peak=5, tokens=12)

    with g.case("rejects-beam-width-0", group=INPUT_CHECKS):
        pool, model, h = _setup(g, 7, 8, 4)
        g.raises("ValueError", "paged_beam_search", *h, [1, 2, 3], 0, 4)
        if g.calls:
            fail(f"raised, but only after {len(g.calls)} call(s) to the pool or the model: check the "
                 "arguments first")
        if pool.num_used:
            fail("raised, but left blocks allocated")
