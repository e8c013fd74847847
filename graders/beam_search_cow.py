"""Hidden grader of beam-search-cow.

Per case the grader builds, from a hidden seed, a block pool and a toy model on it
(``inferprep.sim.paged_kv``) three times: once for its own non-paged beam search (the expected
beams and scores), once for the reference (its peak blocks and tokens processed are the
budget), once for the submission, which gets proxies of the pool and the model. Checked, in
order: no illegal pool operation (recorded by the simulator even if the submission caught the
error), the same beams and scores as the non-paged search, every block freed on return, peak
blocks no more than the reference's, no token run through the model more often than the
reference does.

Input checks (run last): each bad argument must raise ValueError before any call to the pool or
the model, as the statement says. Checked through ``g.calls`` (every proxy call of the case): a
solution that left the token range to ``model.forward``'s own ValueError and freed its prompt
blocks in a ``finally`` once passed, because only leftover blocks were counted.
"""

from __future__ import annotations

import random

from inferprep.grading import INPUT_CHECKS, Grading, GraderError, Trial, expect_close, fail
from inferprep.sim.paged_kv import BlockPool, ToyLM

D_MODEL = 16
_SEED = 0x6B3E_91D4_27A5_C0F1   # hidden: the child cannot rebuild the models' weights


def nonpaged_beam_search(model: ToyLM, prompt: list[int], beam_width: int, max_new_tokens: int):
    """The statement's beam search, with each beam's log-probabilities computed from scratch
    from its whole token sequence (no KV cache at all)."""
    beams: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
    for _ in range(max_new_tokens):
        cands = []
        for rank, (toks, score) in enumerate(beams):
            lp = model.reference_logprobs(prompt + list(toks)).tolist()
            cands.extend((-(score + x), rank, t) for t, x in enumerate(lp))
        cands.sort()   # best score first; ties: better parent rank, then lower token id
        beams = [(beams[r][0] + (t,), -neg) for neg, r, t in cands[:beam_width]]
    return [(list(t), s) for t, s in beams]


class Setup:
    """One case's parameters; ``build()`` makes a fresh, identical pool and model each time."""

    def __init__(self, seed: int, vocab: int, block_size: int, prompt: list[int], beam_width: int,
                 max_new_tokens: int, *, quantum: float = 2.0 ** -20, classes=None,
                 num_blocks: int | None = None, sharpness: float = 1.0):
        self.seed, self.vocab, self.block_size = seed, vocab, block_size
        self.prompt, self.beam_width, self.max_new_tokens = prompt, beam_width, max_new_tokens
        self.quantum, self.classes, self.num_blocks = quantum, classes, num_blocks
        self.sharpness = sharpness

    def build(self, num_blocks: int) -> tuple[BlockPool, ToyLM]:
        pool = BlockPool(num_blocks, self.block_size, D_MODEL, seed=self.seed)
        # max_positions only as large as the case needs: small tables build fast.
        model = ToyLM(pool, self.vocab, seed=self.seed, logprob_quantum=self.quantum,
                      token_classes=self.classes, sharpness=self.sharpness,
                      max_positions=len(self.prompt) + self.max_new_tokens + 8)
        return pool, model

    def args(self) -> tuple:
        return list(self.prompt), self.beam_width, self.max_new_tokens


def _host(g: Grading, pool: BlockPool, model: ToyLM):
    return (g.host(model, ToyLM.CHILD_METHODS, model.child_attrs()),
            g.host(pool, BlockPool.CHILD_METHODS, pool.child_attrs()))


def _check_violations(pool: BlockPool) -> None:
    if pool.violations:
        more = f" (and {len(pool.violations) - 1} more)" if len(pool.violations) > 1 else ""
        fail(f"illegal KV-cache operation: {pool.violations[0]}{more}")


def _as_beams(out) -> list[tuple[list[int], float]]:
    if not isinstance(out, (list, tuple)):
        fail(f"expected a list of (tokens, score) pairs, got {type(out).__name__}")
    beams = []
    for i, item in enumerate(out):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            fail(f"result[{i}] should be a (tokens, score) pair, got {type(item).__name__}")
        toks, score = item
        if hasattr(toks, "tolist") and hasattr(toks, "dim") and toks.dim() == 1 and not toks.is_floating_point():
            toks = toks.tolist()
        if not isinstance(toks, (list, tuple)) or any(isinstance(t, bool) or not isinstance(t, int) for t in toks):
            fail(f"result[{i}][0] should be a list of ints (the generated tokens)")
        beams.append((list(toks), score))
    return beams


def _compare(actual, expected, max_new_tokens: int) -> None:
    beams = _as_beams(actual)
    if len(beams) != len(expected):
        fail(f"returned {len(beams)} beams; the beam search keeps {len(expected)}")
    for i, (toks, _) in enumerate(beams):
        if len(toks) != max_new_tokens:
            fail(f"beam {i} has {len(toks)} generated tokens, expected max_new_tokens = {max_new_tokens}")
    want = [tuple(t) for t, _ in expected]
    got = [tuple(t) for t, _ in beams]
    if got != want:
        if sorted(got) == sorted(want):
            fail("the right beams, but not in the specified order (best score first; ties: the "
                 "parent's rank, then the token id)")
        i = next(k for k in range(len(got)) if got[k] != want[k])
        j = next((k for k in range(max_new_tokens) if got[i][k] != want[i][k]), 0)
        fail(f"beam {i} (best-first) differs from a non-paged beam search, first at generated "
             f"token {j}; your beam {i} is {list(got[i])}")
    for i, ((_, s), (_, e)) in enumerate(zip(beams, expected)):
        expect_close(s, e, name=f"score of beam {i}", rtol=0.0, atol=1e-9)


def _run(g: Grading, ref, setup: Setup) -> None:
    expected = nonpaged_beam_search(setup.build(1)[1], list(setup.prompt), setup.beam_width,
                                     setup.max_new_tokens)
    # Enough blocks for every beam to own a full copy of its sequence, plus the prompt's.
    roomy = 2 * (setup.beam_width * cdiv(len(setup.prompt) + setup.max_new_tokens, setup.block_size)
                 + cdiv(len(setup.prompt), setup.block_size)) + 16
    rpool, rmodel = setup.build(setup.num_blocks or roomy)
    got = ref.paged_beam_search(rmodel, rpool, *setup.args())
    if [(list(t), s) for t, s in got] != expected or rpool.violations or rpool.num_used:
        raise GraderError("the reference disagrees with the non-paged beam search")
    ref_peak, ref_tokens = rpool.peak_used, rmodel.num_tokens_processed
    num_blocks = setup.num_blocks or roomy
    g.show_input(model=f"ToyLM, vocab_size={setup.vocab}" + (f", log-probabilities rounded to {setup.quantum:g}"
                                                             if setup.quantum >= 2.0 ** -10 else ""),
                 pool=f"BlockPool of {num_blocks} blocks of {setup.block_size} tokens", prompt=setup.prompt,
                 beam_width=setup.beam_width, max_new_tokens=setup.max_new_tokens)
    pool, model = setup.build(num_blocks)
    out = g.call("paged_beam_search", *_host(g, pool, model), *setup.args())
    g.show_result(expected, out, name="beams (tokens, score), best first")
    _check_violations(pool)
    _compare(out, expected, setup.max_new_tokens)
    if pool.num_used:
        fail(f"{pool.num_used} block(s) still allocated when paged_beam_search returned (a leak: "
             "free every beam's blocks, pruned ones included)")
    if pool.peak_used > ref_peak:
        fail(f"peak of {pool.peak_used} blocks allocated at once; sharing needs only {ref_peak} "
             "(fork block tables, copy only a shared block about to be written, and free pruned "
             "beams before allocating)")
    if model.num_tokens_processed > ref_tokens:
        fail(f"the model processed {model.num_tokens_processed} tokens; {ref_tokens} are needed "
             "(the prompt once, then each kept beam's newest token once; none for the last step)")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _prompt(rng: random.Random, vocab: int, n: int) -> list[int]:
    return [rng.randrange(vocab) for _ in range(n)]


def _setups() -> list[tuple[str, Setup]]:
    rng = random.Random(_SEED)

    def s(k: int) -> int:
        return (_SEED * 1_000_003 + k) % (1 << 62)

    cases = [
        ("small-partial-block", Setup(s(1), 10, 4, _prompt(rng, 10, 6), 3, 5)),
        ("prompt-fills-its-blocks", Setup(s(2), 10, 4, _prompt(rng, 10, 8), 3, 5)),
        ("greedy-beam-width-1", Setup(s(3), 16, 4, _prompt(rng, 16, 5), 1, 8)),
        ("block-size-1", Setup(s(4), 8, 1, _prompt(rng, 8, 3), 3, 5)),
        ("everything-in-one-block", Setup(s(5), 8, 64, _prompt(rng, 8, 5), 4, 12)),
        ("one-new-token", Setup(s(6), 12, 4, _prompt(rng, 12, 7), 3, 1)),
        ("prompt-of-one-token", Setup(s(7), 12, 4, _prompt(rng, 12, 1), 4, 6)),
        ("beam-wider-than-vocab", Setup(s(8), 3, 2, _prompt(rng, 3, 3), 5, 4)),
        ("twin-tokens-tie-across-parents",
         Setup(s(9), 10, 4, [0, 4, 6, 2, 9], 4, 6, classes=[0, 1, 2, 3, 4, 5, 6, 3, 1, 7])),
        ("coarse-logprobs-many-ties", Setup(s(10), 12, 4, _prompt(rng, 12, 6), 4, 6, quantum=0.25)),
        ("coarse-logprobs-wide-beam", Setup(s(11), 6, 3, _prompt(rng, 6, 4), 6, 5, quantum=0.5)),
        ("integer-logprobs-ties-everywhere", Setup(s(15), 8, 4, _prompt(rng, 8, 5), 4, 6, quantum=1.0)),
        ("half-integer-logprobs-ties", Setup(s(17), 6, 4, _prompt(rng, 6, 5), 3, 8, quantum=0.5)),
        ("many-twin-tokens", Setup(s(18), 8, 4, _prompt(rng, 5, 5), 4, 6, classes=[0, 1, 2, 0, 1, 2, 3, 4])),
        ("wide-vocab-long-scores", Setup(s(16), 64, 8, _prompt(rng, 64, 12), 3, 20, sharpness=0.3)),
        ("prompt-1000-block-16-beams-4", Setup(s(12), 32, 16, _prompt(rng, 32, 1000), 4, 3)),
        ("long-decode", Setup(s(13), 16, 4, _prompt(rng, 16, 10), 4, 30)),
        ("pool-of-exactly-the-reference-peak", Setup(s(14), 12, 4, _prompt(rng, 12, 9), 4, 8)),
    ]
    # Twin-token groups larger than beam_width, beam_width < vocab, coarse rounding: the cut of a
    # step lands inside a group of exactly tied candidates, so a per-beam torch.topk prefilter (whose
    # choice among ties is not the lowest token id) keeps the wrong ones.
    cases += [
        ("twin-group-wider-than-beam",
         Setup(s(20), 16, 16, [2], 5, 4, quantum=0.25, classes=[2, 1, 1, 2, 0, 1, 0, 0, 0, 0, 2, 2, 1, 1, 0, 0])),
        ("four-twin-groups-of-six-beam-3",
         Setup(s(61), 24, 4, [19, 8, 23, 11, 22, 23, 20], 3, 5, quantum=0.5, classes=[i % 4 for i in range(24)])),
    ]
    for k in range(4):
        vocab = rng.randint(2, 24)
        cases.append((f"random-{k}", Setup(s(100 + k), vocab, rng.choice([2, 3, 4, 5, 8, 16]),
                                           _prompt(rng, vocab, rng.randint(1, 40)), rng.randint(1, 6),
                                           rng.randint(1, 12), quantum=rng.choice([2.0 ** -20, 0.125]))))
    return cases


def counterexample(g: Grading, trial: Trial) -> None:
    """A small fresh search: vocabulary, prompt, beam width and steps grow with trial.size; coarse
    log-probabilities (many exact ties) in half the trials; a model seeded from the trial."""
    r = trial.rng
    vocab = r.randint(2, 3 + trial.size)
    setup = Setup(r.randrange(1 << 62), vocab, r.choice([1, 2, 3, 4]), _prompt(r, vocab, r.randint(1, 2 * trial.size)),
                  r.randint(1, min(trial.size + 1, 5)), r.randint(1, trial.size + 1),
                  quantum=r.choice([2.0 ** -20, 0.25, 0.5, 1.0]))
    _run(g, g.reference(), setup)


def grade(g: Grading) -> None:
    ref = g.reference()
    for name, setup in _setups():
        with g.case(name):
            if name == "pool-of-exactly-the-reference-peak":
                rpool, rmodel = setup.build(1024)
                ref.paged_beam_search(rmodel, rpool, *setup.args())
                setup.num_blocks = rpool.peak_used
            _run(g, ref, setup)

    bad = [("rejects-beam-width-0", [1, 2, 3], 0, 4), ("rejects-max-new-tokens-0", [1, 2, 3], 2, 0),
           ("rejects-empty-prompt", [], 2, 4), ("rejects-token-equal-to-vocab-size", [1, 8, 3], 2, 4),
           ("rejects-negative-token", [1, -1, 3], 2, 4)]
    for name, prompt, width, steps in bad:
        with g.case(name, group=INPUT_CHECKS):
            pool, model = Setup(_SEED % 1000, 8, 4, prompt, width, steps).build(64)
            g.raises("ValueError", "paged_beam_search", *_host(g, pool, model), prompt, width, steps)
            if g.calls:
                made = ", ".join(c.method for c in g.calls[:4]) + (", ..." if len(g.calls) > 4 else "")
                fail(f"raised ValueError, but only after {len(g.calls)} call(s) to the pool or the model "
                     f"({made}): check the arguments before any pool or model call")
            if pool.num_used:
                fail(f"raised ValueError but left {pool.num_used} block(s) allocated: check the "
                     "arguments before touching the pool")
