"""Hidden grader for sampling-order (DM-28).

sampling_probs is compared with the reference (float32 output, rtol 2e-6, atol 1e-12; a token the
knobs drop must be exactly 0). sample is checked statistically: one call with the same row repeated
n times gives n independent draws; every draw must lie in the support, greedy rows must be the
argmax every time, and the total variation distance between the draws and the reference
distribution must stay under a bound a correct sampler exceeds with probability < 1e-9
(Bretagnolle-Huber-Carol inequality). Random cases are drawn from fixed seeds and re-drawn when a
mass comparison lies within 1e-7 of its threshold, so rounding cannot decide them; the cases that
sit near a threshold on purpose (binary-exact masses, masses 1.5e-8 away, float64 logits 1e-12
apart) say so.

sample's randomness: with a generator, the same state gives the same ids and other seeds other
ids; without one, two calls differ, and after ``g.seed_torch(s)`` (torch.manual_seed in the child,
s from the salt) a call without a generator returns exactly the ids of a call given a generator
seeded s: a private generator cannot. The false alarms of the statistical checks: each total-
variation check fails a correct sampler with probability below 1e-9 (about 10 checks per run),
the dispersion check below 1e-9 (tests/figures); the equality checks are exact.

The ValueError cases form the ``input checks`` group and run after every core case.
"""

from __future__ import annotations

import itertools
import math
import random

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_tensor, fail

HF = ("temperature", "top_k", "top_p", "min_p")
VLLM_V1 = ("temperature", "min_p", "top_k", "top_p")
LLAMA_CPP = ("top_k", "top_p", "min_p", "temperature")
RTOL, ATOL = 2e-6, 1e-12
DELTA = 1e-9          # false-rejection probability of one distribution test
NAN, INF = float("nan"), float("inf")
CHECK_BOUNDARIES = False   # tests/figures/test_sampling_order.py turns this on to vet the fixed cases
LN2 = math.log(2.0)
DISPERSION_MIN = 250  # sample-rows-are-independent: P(sum of 20 squared Binomial(1000, .5) deviations <= 250) < 1e-9


def _logp(rows, dtype=torch.float32) -> torch.Tensor:
    """Logits whose softmax is the given probabilities (rows of positive numbers)."""
    return torch.tensor(rows, dtype=torch.float64).log().to(dtype)


def _on_dev(g: Grading, v):
    return v.to(g.device) if isinstance(v, torch.Tensor) else v


def _check_probs(g: Grading, ref, logits: torch.Tensor, what: str = "", on_boundary: bool = False, **knobs) -> None:
    """One sampling_probs call compared with the reference. Unless on_boundary says the case is
    meant to sit near a threshold, the grader first checks that it does not (its own bug)."""
    logits, knobs = logits.to(g.device), {k: _on_dev(g, v) for k, v in knobs.items()}
    if CHECK_BOUNDARIES and not on_boundary and not _robust(ref, logits, {"min_p": 0.0, **knobs}):
        raise AssertionError(f"grader bug: case {what!r} has a comparison within 1e-7 of a threshold")
    out = g.call("sampling_probs", logits, **knobs)
    expected = ref.sampling_probs(logits, **knobs)
    name = f"probs{' (' + what + ')' if what else ''}"
    # type, shape, dtype, device, no NaN or inf (values are compared below)
    expect_tensor(out, expected, name=name, dtype=torch.float32, atol=math.inf)
    g.show_result(expected, out, name=name, rtol=RTOL, atol=ATOL)   # what the student sees, at the real tolerance
    got, exp = out.detach().cpu().double(), expected.cpu().double()
    leaked = (exp == 0) & (got != 0)
    if leaked.any():
        r, i = (int(v) for v in leaked.nonzero()[0])
        fail(f"{name}: row {r}, token {i} must have probability exactly 0 (dropped by the knobs, or not "
             f"the choice of a greedy row), got {got[r, i].item():.3g}; {int(leaked.sum())} such value(s)")
    missing = (exp > 1e-6) & (got == 0)
    if missing.any():
        r, i = (int(v) for v in missing.nonzero()[0])
        fail(f"{name}: row {r}, token {i} has probability 0 although the knobs keep it; "
             f"{int(missing.sum())} such value(s)")
    expect_tensor(out, expected, name=name, rtol=RTOL, atol=ATOL, dtype=torch.float32)


def counterexample(g: Grading, trial: Trial) -> bool | None:
    """A small random batch for sampling_probs (trial.size + 1 rows of 2 to 6 tokens, ties, -inf logits,
    greedy rows, per-row or scalar knobs, a random order), compared with the reference. ``sample``
    is checked statistically, over thousands of draws: no small counterexample shows it."""
    if all(name.startswith("sample-") for name in trial.failed):
        return False                    # only sample's statistical cases failed
    ref = g.reference()
    logits, knobs = _random_case(ref, trial.rng.randrange(1 << 62), trial.size + 1, trial.rng.randint(2, 6))
    _check_probs(g, ref, logits, **knobs)
    return None


def grade(g: Grading) -> None:
    ref = g.reference()
    dev = g.device

    def on_dev(v):
        return _on_dev(g, v)

    def knobs_to(knobs: dict) -> dict:
        return {k: on_dev(v) for k, v in knobs.items()}

    def check_probs(logits: torch.Tensor, what: str = "", on_boundary: bool = False, **knobs) -> None:
        _check_probs(g, ref, logits, what, on_boundary, **knobs)

    def check_draws(logits_rows: torch.Tensor, groups: list[tuple[list[int], torch.Tensor]],
                    **knobs) -> torch.Tensor:
        """One sample call; groups: (row indices, expected float64 distribution of those rows).
        Returns the ids (on CPU)."""
        logits_rows, knobs = logits_rows.to(dev), knobs_to(knobs)
        ids = g.call("sample", logits_rows, **knobs)
        n_rows, V = logits_rows.shape
        if not isinstance(ids, torch.Tensor):
            fail(f"sample: expected a torch.Tensor, got {type(ids).__name__}")
        if tuple(ids.shape) != (n_rows,):
            fail(f"sample: expected shape ({n_rows},), got {tuple(ids.shape)}")
        if ids.dtype != torch.int64:
            fail(f"sample: expected dtype torch.int64, got {ids.dtype}")
        if ids.device.type != dev.type:
            fail(f"sample: expected a tensor on {dev.type}, got {ids.device.type}")
        ids = ids.cpu()
        if ((ids < 0) | (ids >= V)).any():
            fail(f"sample: token id out of range [0, {V})")
        for gi, (rows, p) in enumerate(groups):
            draws = ids[torch.tensor(rows)]
            outside = p[draws] == 0
            if outside.any():
                fail(f"sample: group {gi}: drew token {int(draws[outside][0])}, which the knobs exclude "
                     f"({int(outside.sum())} of {len(rows)} draws outside the support)")
            support = (p > 0).nonzero().flatten()
            if len(support) == 1:
                continue                                   # every draw is the one token: checked above
            n = len(rows)
            counts = torch.bincount(draws, minlength=V).double()
            order = p.argsort(descending=True)
            head = order[:9]
            cells_p = torch.cat([p[head], (1 - p[head].sum()).clamp_min(0)[None]])
            cells_c = torch.cat([counts[head], (n - counts[head].sum())[None]])
            K = len(cells_p)
            tv = 0.5 * float((cells_c / n - cells_p).abs().sum())
            bound = math.sqrt((K * math.log(2) + math.log(1 / DELTA)) / (2 * n))
            if tv > bound:
                fail(f"sample: group {gi}: the draws do not follow the knobs' distribution: total variation "
                     f"distance {tv:.3f} over {n} draws (a correct sampler stays under {bound:.3f} with "
                     f"probability > 1 - {DELTA:g})")
        return ids

    # -- the orders of the engines, on one six-token example (the editorial's) --------------------
    six = _logp([[0.45, 0.25, 0.12, 0.08, 0.06, 0.04]])
    knobs6 = dict(temperature=1.5, top_k=0, top_p=0.85, min_p=0.25)
    for label, order in (("hf", HF), ("vllm-v1", VLLM_V1), ("llama-cpp", LLAMA_CPP)):
        with g.case(f"order-{label}-six-tokens"):
            check_probs(six, order=order, **knobs6)
    with g.case("every-order-of-the-four-knobs"):
        x = _logp([[0.3, 0.22, 0.18, 0.12, 0.1, 0.08], [0.45, 0.25, 0.12, 0.08, 0.06, 0.04]])
        for order in itertools.permutations(HF):
            check_probs(x, f"order {order}", temperature=torch.tensor([2.0, 1.5]), top_k=5,
                        top_p=torch.tensor([0.72, 0.85]), min_p=0.25, order=list(order))

    # -- DOMAIN-NOTES section 3, examples A-F --------------------------------------------------------
    with g.case("temperature-before-vs-after-top-p"):
        x = _logp([[0.6, 0.2, 0.1, 0.05, 0.03, 0.02]])
        check_probs(x, "temperature first", temperature=2.0, top_k=0, top_p=0.75)
        check_probs(x, "temperature last", temperature=2.0, top_k=0, top_p=0.75, order=LLAMA_CPP)
    with g.case("temperature-before-truncation"):         # I1 (b): sglang-jax applied it after
        x = torch.tensor([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0], [0.5, 0.0, -0.5], [2.0, 1.0, 0.0]])
        t = torch.tensor([0.5, 0.5, 3.0, 0.25])
        check_probs(x, "cooling before top-p", temperature=t, top_k=0, top_p=0.8)
        check_probs(x, "min-p after temperature", temperature=t, top_k=0, top_p=1.0, min_p=0.3)
        check_probs(x, "temperature after top-p", temperature=t, top_k=0, top_p=0.8,
                    order=("top_p", "temperature", "top_k", "min_p"))
    with g.case("top-p-after-top-k-renormalisation"):
        check_probs(_logp([[0.3, 0.25, 0.2, 0.1, 0.1, 0.05]]), temperature=1.0, top_k=3, top_p=0.6)
        check_probs(_logp([[0.3, 0.25, 0.2, 0.1, 0.1, 0.05]]), temperature=1.0, top_k=3, top_p=0.6,
                    order=("top_p", "top_k", "temperature", "min_p"))
    with g.case("min-p-before-vs-after-top-p"):
        x = _logp([[0.4, 0.3, 0.12, 0.08, 0.06, 0.04]])
        check_probs(x, "top-p first", temperature=1.0, top_k=0, top_p=0.75, min_p=0.25)
        check_probs(x, "min-p first", temperature=1.0, top_k=0, top_p=0.75, min_p=0.25, order=VLLM_V1)
    with g.case("min-p-before-vs-after-temperature"):
        x = _logp([[0.5, 0.2, 0.12, 0.1, 0.05, 0.03]])
        check_probs(x, "temperature first", temperature=3.0, top_k=0, top_p=1.0, min_p=0.3)
        check_probs(x, "temperature last", temperature=3.0, top_k=0, top_p=1.0, min_p=0.3, order=LLAMA_CPP)
    with g.case("top-p-exact-binary-boundary"):
        # probabilities .5 .25 .125 .125 exactly: a mass equal to top_p does not keep the next token
        x = torch.tensor([[0.0, -LN2, -2 * LN2, -2 * LN2]] * 3, dtype=torch.float64)
        check_probs(x, temperature=1, top_k=0, top_p=torch.tensor([0.5, 0.75, 0.875], dtype=torch.float64),
                    on_boundary=True)
    with g.case("top-k-keeps-ties-at-the-kth-value"):
        x = torch.tensor([[2.0, 1.0, 1.0, 0.0], [3.0, 3.0, 2.0, 1.0], [5.0, 1.0, 5.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
        check_probs(x, "k=2", temperature=1.0, top_k=2, top_p=1.0)
        check_probs(x, "k=1", temperature=0.7, top_k=torch.tensor([1, 1, 1, 3], dtype=torch.int32), top_p=1.0)
    with g.case("top-k-off-values"):
        x = torch.tensor([[2.0, 1.5, 1.0, 0.0, -1.0]] * 6)
        for k in (0, -1, -7, 5, 9, 2**40):
            check_probs(x[:1], f"top_k={k}", temperature=1.0, top_k=k, top_p=1.0)
        check_probs(x, "per-row", temperature=1.0, top_k=torch.tensor([0, -1, 5, 6, 2, 1]), top_p=1.0)
        # any integer: a Python int past int64 is still off, and an int64 tensor is used as int64
        for k in (2**70, -(2**70)):
            check_probs(x[:1], "top_k=2**70" if k > 0 else "top_k=-2**70", temperature=1.0, top_k=k, top_p=1.0)
        check_probs(x[:3], "int64 past int32", temperature=1.0, top_p=1.0,
                    top_k=torch.tensor([2**32 + 1, -(2**32) + 2, 2**40 + 3], dtype=torch.int64))

    # -- top-p: ties, tiny values (I2), and top_p = 1 -----------------------------------------------
    with g.case("top-p-keeps-tied-tokens-together"):
        x = _logp([[0.4, 0.2, 0.2, 0.2], [0.3, 0.3, 0.2, 0.2], [0.2, 0.35, 0.1, 0.35]])
        check_probs(x, temperature=1.0, top_k=0, top_p=torch.tensor([0.5, 0.25, 0.6]))
        check_probs(x, "after temperature", temperature=0.5, top_k=0, top_p=0.45)
    with g.case("top-p-tiny-gives-argmax"):              # I2: 1 - 1e-8 == 1 in float32
        x = torch.tensor([[2.0, 1.0, 0.0, -1.0], [0.0, 2.0, 2.0, 1.0], [-1.0, 3.0, -2.0, 2.9]])
        for p in (1e-8, 1e-300, 5e-324, 1e-3):
            check_probs(x, f"top_p={p:g}", temperature=0.8, top_k=0, top_p=p)
        check_probs(x.to(torch.bfloat16), "bf16 logits", temperature=0.8, top_k=0, top_p=1e-8)
        check_probs(x, "per-row", temperature=0.8, top_k=0, top_p=torch.tensor([1e-8, 1e-8, 1e-3]))
    with g.case("top-p-one-is-off"):
        x = torch.linspace(0, -900, 40)[None].repeat(2, 1)          # tail probabilities underflow
        check_probs(x, temperature=torch.tensor([1.0, 40.0]), top_k=0, top_p=1.0)
        check_probs(x, temperature=torch.tensor([1.0, 40.0]), top_k=0, top_p=1)
    with g.case("top-p-one-is-off-before-a-huge-temperature"):
        # Temperature last: when top-p runs, tokens 1.. have probabilities below 1e-16, so the mass
        # before them rounds to exactly 1.0 and "mass before < top_p" would drop them at top_p = 1;
        # the temperature that follows makes them almost as likely as token 0.
        x = torch.tensor([[0.0, -40.0, -80.0, -120.0], [5.0, -60.0, 0.0, -700.0]], dtype=torch.float64)
        check_probs(x, temperature=torch.tensor([1e3, 1e6]), top_k=0, top_p=1.0, order=LLAMA_CPP)
        check_probs(x, "int top_p", temperature=1e4, top_k=0, top_p=1, order=("top_p", "temperature", "top_k", "min_p"))

    # -- min-p: relative to the max, masking with -inf (I1 a) ---------------------------------------
    with g.case("min-p-relative-to-the-most-probable-token"):
        x = _logp([[0.4, 0.3, 0.12, 0.08, 0.06, 0.04], [0.2, 0.18, 0.17, 0.16, 0.15, 0.14]])
        check_probs(x, temperature=1.0, top_k=0, top_p=1.0, min_p=torch.tensor([0.25, 0.82]))
        check_probs(x, temperature=1.0, top_k=0, top_p=1.0, min_p=0.93)
    with g.case("dropped-tokens-get-minus-inf"):         # I1 (a): 0.0 written into a logit is not a mask
        x = torch.tensor([[5.0, 1.0, -3.0], [8.0, 7.0, 6.0], [-1.0, -4.0, -6.0], [9.0, 3.0, -9.0]])
        check_probs(x, "min-p", temperature=1.0, top_k=0, top_p=1.0, min_p=0.1)
        check_probs(x, "top-k", temperature=1.0, top_k=1, top_p=1.0)
        check_probs(x, "top-p", temperature=2.0, top_k=0, top_p=0.5)
    with g.case("min-p-one-keeps-ties-at-the-max"):
        x = torch.tensor([[1.0, 4.0, 4.0, 3.0], [0.0, 0.0, 0.0, 0.0]])
        check_probs(x, temperature=1.0, top_k=0, top_p=1.0, min_p=1.0)
        check_probs(x, temperature=1.0, top_k=0, top_p=1.0, min_p=1)

    # -- temperature 0 is greedy, per row (I3) ------------------------------------------------------
    with g.case("greedy-row-among-sampled-rows"):
        x = torch.tensor([[1.0, 3.0, 2.0], [1.0, 3.0, 2.0], [2.0, 2.0, 1.0], [2.0, 2.0, 1.0], [0.5, 0.1, 0.5]])
        check_probs(x, temperature=torch.tensor([0.0, 0.7, 0.0, 1.3, 0.0]), top_k=0, top_p=1.0)
        check_probs(x, "with knobs", temperature=torch.tensor([0.0, 0.7, 0.0, 1.3, 0.0], dtype=torch.float64),
                    top_k=2, top_p=0.9, min_p=0.1, order=LLAMA_CPP)
    with g.case("greedy-ignores-the-other-knobs"):
        x = torch.tensor([[-INF, 1.0, 7.0, 2.0, 7.0, 6.9], [3.0, -INF, 1.0, 3.0, 0.0, -INF]])
        for order in (HF, LLAMA_CPP, VLLM_V1):
            check_probs(x, f"order {order}", temperature=0.0, top_k=1, top_p=1e-6, min_p=1.0, order=order)
        check_probs(x, "int zero", temperature=0, top_k=3, top_p=0.2, min_p=0.5)
        check_probs(x, "tensor zeros", temperature=torch.zeros(2), top_k=0, top_p=1.0)
    with g.case("greedy-ties-take-the-lowest-index"):
        x = torch.tensor([[2.0, 2.0, 1.0], [-INF, 5.0, 5.0], [0.0, 1.0, 1.0], [4.0, 4.0, 4.0]])
        check_probs(x, temperature=0.0, top_k=0, top_p=1.0)
    with g.case("tiny-temperature-is-not-greedy"):
        x = torch.tensor([[1.0, 3.0, 3.0, 2.0], [1.0, 1.02, 0.99, 0.5]])
        check_probs(x, temperature=torch.tensor([1e-6, 1e-2]), top_k=0, top_p=1.0)
        check_probs(x[:1], "1e-200", temperature=1e-200, top_k=0, top_p=1.0)

    with g.case("tiny-temperature-does-not-overflow"):
        # (z - max z) / T: 3 / 1e-308 overflows to +inf, (3 - 3) / 1e-308 does not
        x = torch.tensor([[3.0, 2.0, 1.0], [1.0, 3.0, 3.0]])
        check_probs(x, "T=1e-308", temperature=1e-308, top_k=0, top_p=1.0)
        check_probs(x.double(), "T=5e-324 per row", temperature=torch.tensor([5e-324, 1e-308], dtype=torch.float64),
                    top_k=0, top_p=1.0)
    with g.case("min-p-exact-binary-boundary"):
        # probabilities .5 .25 .125 .125 exactly: a token at exactly min_p times the max stays
        x = torch.tensor([[0.0, -LN2, -2 * LN2, -2 * LN2]] * 3, dtype=torch.float64)
        check_probs(x, temperature=1.0, top_k=0, top_p=1.0, min_p=torch.tensor([0.5, 0.25, 0.5]),
                    on_boundary=True)
        check_probs(x[:1], "scalar", temperature=1, top_k=0, top_p=1.0, min_p=0.5, on_boundary=True)

    # -- numerics, dtypes, shapes --------------------------------------------------------------------
    with g.case("float64-accuracy-at-low-temperature"):
        x = torch.randn(4, 64, generator=g.rng(11)) * 30
        check_probs(x, temperature=torch.tensor([0.05, 0.2, 1.0, 0.1]), top_k=0, top_p=1.0)
    with g.case("float64-mass-comparisons"):
        # top_p and min_p 1.5e-8 away from the mass they are compared with: float64 decides these
        # (the statement promises no margin under 1e-9); float32 rounding (6e-8 near 1) cannot.
        x, p, m = _near_threshold_rows(g.rng(14), 16)
        check_probs(x, "top-p", temperature=1.0, top_k=0, top_p=p, on_boundary=True)
        check_probs(x, "min-p", temperature=1.0, top_k=0, top_p=1.0, min_p=m, on_boundary=True)
    with g.case("greedy-argmax-in-float64"):
        # float64 logits 1e-12 apart: in float32 they round to one value and the first index wins a tie
        x = torch.tensor([[1.0, 1.0 + 1e-12, 0.5], [3.0, -2.0, 3.0 + 2e-12], [0.25 - 1e-12, 0.25, 0.25]],
                         dtype=torch.float64)
        check_probs(x, temperature=0.0, top_k=0, top_p=1.0)
        check_probs(x, "per-row", temperature=torch.tensor([0.0, 0.0, 0.0]), top_k=2, top_p=0.5)
    with g.case("top-k-threshold-in-float64"):
        # the k-th largest logit 1e-12 above the next: float64 keeps k tokens, float32 sees a tie and keeps k + 1
        x = torch.tensor([[2.0, 1.0 + 1e-12, 1.0, 0.0], [0.5, 0.5 - 1e-12, 0.7, -1.0]], dtype=torch.float64)
        check_probs(x, "k=2", temperature=1.0, top_k=2, top_p=1.0)
        check_probs(x, "after temperature", temperature=0.5, top_k=2, top_p=1.0)
        check_probs(x, "temperature last", temperature=0.5, top_k=2, top_p=1.0, order=LLAMA_CPP)
    with g.case("minus-inf-logits"):
        x = torch.tensor([[-INF, 1.0, -INF, 0.5, 0.0], [-INF, -INF, 2.0, -INF, -INF],
                          [0.0, -INF, 0.0, -INF, -1.0]])
        check_probs(x, temperature=1.0, top_k=4, top_p=0.9, min_p=0.05)
        check_probs(x, "llama.cpp order", temperature=0.5, top_k=2, top_p=0.6, order=LLAMA_CPP)
    with g.case("half-precision-logits"):
        x = torch.randn(3, 40, generator=g.rng(12)) * 3
        check_probs(x.to(torch.bfloat16), "bf16", temperature=0.9, top_k=20, top_p=0.9, min_p=0.02)
        check_probs(x.to(torch.float16), "fp16", temperature=torch.tensor([0.6, 1.0, 1.6], dtype=torch.float16),
                    top_k=torch.tensor([5, 0, 30], dtype=torch.int16), top_p=0.8)
    with g.case("empty-batch-and-one-token-vocabulary"):
        check_probs(torch.zeros(0, 6), "B=0", temperature=1.0, top_k=2, top_p=0.5)
        check_probs(torch.zeros(0, 6), "B=0 per-row", temperature=torch.zeros(0), top_k=torch.zeros(0, dtype=torch.int64),
                    top_p=torch.ones(0))
        check_probs(torch.tensor([[3.0], [-1.0]]), "V=1", temperature=torch.tensor([0.0, 2.0]), top_k=1, top_p=0.3,
                    min_p=1.0)
    with g.case("knob-types"):
        x = torch.randn(4, 12, generator=g.rng(13)) * 2
        check_probs(x, "python ints", temperature=2, top_k=7, top_p=1, min_p=0)
        check_probs(x, "int temperature tensor", temperature=torch.tensor([1, 2, 3, 1]), top_k=0, top_p=0.9)
        check_probs(x, "float32 knobs", temperature=torch.tensor([0.5, 1.0, 1.5, 2.0]),
                    top_k=torch.tensor([3, 0, 12, 5], dtype=torch.int64),
                    top_p=torch.tensor([0.6, 0.95, 1.0, 0.7]), min_p=torch.tensor([0.0, 0.2, 0.05, 0.5]))
        check_probs(x, "float64 knobs", temperature=torch.tensor([0.5, 1.0, 1.5, 2.0], dtype=torch.float64),
                    top_k=torch.tensor([3, 0, 12, 5], dtype=torch.int32),
                    top_p=torch.tensor([0.6, 0.95, 1.0, 0.7], dtype=torch.float64),
                    min_p=torch.tensor([0.0, 0.2, 0.05, 0.5], dtype=torch.float64), order=list(VLLM_V1))

    # -- random batches: per-row knobs, ties, random orders -----------------------------------------
    for i, (B, V) in enumerate([(8, 2), (8, 7), (16, 50), (8, 257), (4, 1000), (2, 3000), (12, 16), (6, 33)]):
        with g.case(f"random-{i}-B{B}-V{V}"):
            logits, knobs = _random_case(ref, 1000 + i, B, V)
            check_probs(logits, **knobs)

    # -- sample: statistics, support, greedy rows -----------------------------------------------------
    with g.case("sample-without-generator-uses-the-global-one"):
        # torch.manual_seed(s) in the submission's process, s from the grading's salt; then, without a
        # generator, sample must draw exactly as it does given torch.Generator().manual_seed(s): the
        # same ids. A private generator (seeded from os.urandom, the clock or a constant, once or per
        # call) gives others: 2000 draws from 5 tokens never agree by chance. (One that copies the
        # global seed on every call repeats itself: sample-without-generator-is-not-reproducible.)
        row = _logp([[0.3, 0.25, 0.2, 0.15, 0.1]])
        m = 2000
        p = ref.sampling_probs(row, 1.0, 0, 1.0)[0].double()
        s = random.Random(f"sampling-order global generator:{g.salt}").randrange(1 << 62)
        g.seed_torch(s)
        without = check_draws(row.repeat(m, 1), [(list(range(m)), p)], temperature=1.0, top_k=0, top_p=1.0)
        given = check_draws(row.repeat(m, 1), [(list(range(m)), p)], temperature=1.0, top_k=0, top_p=1.0,
                            generator=torch.Generator(device=dev).manual_seed(s))
        if not torch.equal(without, given):
            fail(f"sample: after torch.manual_seed(s), a call without a generator and a call given "
                 f"torch.Generator().manual_seed(s) gave different ids ({int((without != given).sum())} of "
                 f"{m} rows differ): without `generator`, draw from torch's global generator")
    n = 20000
    with g.case("sample-follows-the-distribution"):
        p = ref.sampling_probs(six, order=HF, **knobs6)[0].double()
        check_draws(six.repeat(n, 1), [(list(range(n)), p)], order=HF, **knobs6)
    with g.case("sample-follows-the-given-order"):
        p = ref.sampling_probs(six, order=LLAMA_CPP, **knobs6)[0].double()
        check_draws(six.repeat(n, 1), [(list(range(n)), p)], order=LLAMA_CPP, **knobs6)
    with g.case("sample-per-row-knobs-and-greedy-rows"):   # I3: a T=0 row in a sampled batch
        base = torch.tensor([[1.0, 3.0, 2.0, 0.5], [2.0, 2.0, 1.0, 0.0], [0.3, 0.2, 0.1, 0.0], [1.0, 0.0, 1.0, -1.0]])
        t = torch.tensor([0.0, 0.0, 0.7, 1.3])
        k = torch.tensor([0, 0, 3, 0])
        pp = torch.tensor([1.0, 1.0, 1.0, 0.9])
        reps = 8000
        x = base.repeat(reps, 1)
        exp = ref.sampling_probs(base, t, k, pp, 0.0).double()
        groups = [(list(range(j, 4 * reps, 4)), exp[j]) for j in range(4)]
        check_draws(x, groups, temperature=t.repeat(reps), top_k=k.repeat(reps), top_p=pp.repeat(reps))
    with g.case("sample-top-p-tiny-gives-argmax"):        # I2
        x = torch.tensor([[2.0, 1.0, 0.0, -1.0]]).repeat(2000, 1)
        check_draws(x, [(list(range(2000)), torch.tensor([1.0, 0, 0, 0], dtype=torch.float64))],
                    temperature=0.8, top_k=0, top_p=1e-8)
    with g.case("sample-never-leaves-the-support"):
        row = torch.randn(1, 256, generator=g.rng(21)) * 2
        knobs = dict(temperature=1.2, top_k=20, top_p=0.8, min_p=0.05)
        p = ref.sampling_probs(row, **knobs)[0].double()
        check_draws(row.repeat(4000, 1), [(list(range(4000)), p)], **knobs)
    with g.case("sample-uses-the-given-generator"):
        row = _logp([[0.3, 0.25, 0.2, 0.15, 0.1]])
        p = ref.sampling_probs(row, 1.0, 0, 1.0)[0].double()
        m = 4000          # two runs of 4000 draws from 5 tokens never agree by chance

        def gen(seed: int) -> torch.Generator:
            return torch.Generator(device=dev).manual_seed(seed)

        first = check_draws(row.repeat(m, 1), [(list(range(m)), p)], temperature=1.0, top_k=0, top_p=1.0,
                            generator=gen(31))
        again = check_draws(row.repeat(m, 1), [(list(range(m)), p)], temperature=1.0, top_k=0, top_p=1.0,
                            generator=gen(31))
        if not torch.equal(first, again):
            fail(f"sample: two calls with generators in the same state gave different ids "
                 f"({int((first != again).sum())} of {m} rows differ): draw with `generator`, nothing else")
        other = check_draws(row.repeat(m, 1), [(list(range(m)), p)], temperature=1.0, top_k=0, top_p=1.0,
                            generator=gen(32))
        if torch.equal(first, other):
            fail("sample: generators seeded 31 and 32 gave identical ids: the generator's state is not used")
    with g.case("sample-without-generator-is-not-reproducible"):
        row = torch.zeros(1, 2)                       # two tokens, probability 1/2 each
        m = 1000
        first = check_draws(row.repeat(m, 1), [(list(range(m)), torch.tensor([0.5, 0.5], dtype=torch.float64))],
                            temperature=1.0, top_k=0, top_p=1.0)
        again = check_draws(row.repeat(m, 1), [(list(range(m)), torch.tensor([0.5, 0.5], dtype=torch.float64))],
                            temperature=1.0, top_k=0, top_p=1.0)
        if torch.equal(first, again):
            fail("sample: two calls without a generator gave identical ids: use torch's global generator, "
                 "not a private generator with a fixed seed")
    with g.case("sample-rows-are-independent"):
        # 20 calls of 1000 fair coin rows: the count of token 0 per call is Binomial(1000, 1/2), so the
        # squared deviations from 500 sum to about 5000. Draws that share one uniform across the batch
        # (systematic sampling) give counts within 1 of 500: a sum <= 20. A correct sampler has a sum
        # <= 250 with probability < 1e-9 (exact binomial convolution, tests/figures).
        row = torch.zeros(1, 2)
        m, calls, s = 1000, 20, 0
        for _ in range(calls):
            ids = check_draws(row.repeat(m, 1), [(list(range(m)), torch.tensor([0.5, 0.5], dtype=torch.float64))],
                              temperature=1.0, top_k=0, top_p=1.0)
            s += (int((ids == 0).sum()) - m // 2) ** 2
        if s <= DISPERSION_MIN:
            fail(f"sample: over {calls} calls of {m} identical fair rows, the per-call counts of token 0 stay "
                 f"too close to {m // 2} (sum of squared deviations {s}, expected about {calls * m // 4}; "
                 f"independent draws give <= {DISPERSION_MIN} with probability < 1e-9): rows are not drawn "
                 f"independently")
    with g.case("sample-one-row"):
        row = torch.tensor([[0.5, 2.0, -1.0, 2.0]])
        check_draws(row, [([0], torch.tensor([0, 1.0, 0, 0], dtype=torch.float64))], temperature=0.0, top_k=0,
                    top_p=1.0)
        check_draws(row, [([0], torch.tensor([0, 0.5, 0, 0.5], dtype=torch.float64))], temperature=1.0, top_k=2,
                    top_p=1.0)
    with g.case("sample-empty-batch"):
        ids = g.call("sample", torch.zeros(0, 5, device=dev), 1.0, 0, 1.0)
        expect_tensor(ids, torch.zeros(0, dtype=torch.int64, device=dev), name="ids")

    # -- ValueError, one case per class of bad input ------------------------------------------------
    x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]], device=dev)
    ok = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0)

    def bad(**change):
        g.raises("ValueError", "sampling_probs", change.pop("logits", x), **knobs_to({**ok, **change}))

    with g.case("rejects-negative-temperature", group=INPUT_CHECKS):
        bad(temperature=-0.5)
        bad(temperature=torch.tensor([0.7, -1e-3]))
    with g.case("rejects-non-finite-temperature", group=INPUT_CHECKS):
        bad(temperature=NAN)
        bad(temperature=INF)
        bad(temperature=torch.tensor([1.0, NAN]))
    with g.case("rejects-non-integer-top-k", group=INPUT_CHECKS):
        bad(top_k=2.5)
        bad(top_k=torch.tensor([2.0, 3.0]))
    with g.case("rejects-top-p-out-of-range", group=INPUT_CHECKS):
        for p in (0.0, 0, -0.1, 1.5, torch.tensor([0.9, 0.0]), torch.tensor([1.0, 1.01])):
            bad(top_p=p)
    with g.case("rejects-min-p-out-of-range", group=INPUT_CHECKS):
        for m in (-0.1, 1.5, torch.tensor([0.1, 1.2])):
            bad(min_p=m)
    with g.case("rejects-nan-top-p-or-min-p", group=INPUT_CHECKS):
        bad(top_p=NAN)
        bad(min_p=NAN)
        bad(top_p=torch.tensor([0.5, NAN]))
    with g.case("rejects-order-that-is-not-a-permutation", group=INPUT_CHECKS):
        for order in (("temperature", "top_k", "top_p"), ("temperature", "top_k", "top_p", "top_p"),
                      ("temperature", "top_k", "top_p", "top_a"), HF + ("min_p",), "temperature"):
            bad(order=order)
    with g.case("rejects-nan-logits", group=INPUT_CHECKS):
        bad(logits=torch.tensor([[1.0, NAN, 0.0], [0.0, 0.0, 0.0]], device=dev))
    with g.case("rejects-positive-inf-logits", group=INPUT_CHECKS):
        bad(logits=torch.tensor([[1.0, INF, 0.0], [0.0, 0.0, 0.0]], device=dev))
    with g.case("rejects-row-without-a-finite-logit", group=INPUT_CHECKS):
        bad(logits=torch.tensor([[1.0, 2.0, 0.0], [-INF, -INF, -INF]], device=dev))
        bad(logits=torch.zeros(2, 0, device=dev))
        g.raises("ValueError", "sampling_probs", torch.full((1, 3), -INF, device=dev), **ok)   # B = 1
        g.raises("ValueError", "sampling_probs", torch.zeros(1, 0, device=dev), **ok)
    with g.case("rejects-logits-that-are-not-2d", group=INPUT_CHECKS):
        bad(logits=torch.zeros(3, device=dev))
        bad(logits=torch.zeros(1, 2, 3, device=dev))
        bad(logits=[[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]])                # a list is not a tensor
    with g.case("rejects-logits-of-a-non-floating-dtype", group=INPUT_CHECKS):
        bad(logits=torch.tensor([[1, 2, 3], [0, 0, 1]], device=dev))
        bad(logits=torch.tensor([[1, 2, 3], [0, 0, 1]], dtype=torch.int32, device=dev))
    with g.case("rejects-per-row-knob-of-wrong-length", group=INPUT_CHECKS):
        bad(temperature=torch.ones(3))
        bad(top_k=torch.ones(1, dtype=torch.int64))
        bad(top_p=torch.ones(2, 1))
    with g.case("rejects-python-bool-knob", group=INPUT_CHECKS):   # bool is an int subclass, but not a knob value
        bad(top_k=True)
        bad(top_p=True)
    with g.case("rejects-bool-tensor-knob", group=INPUT_CHECKS):
        bad(top_p=torch.tensor([True, True]))
        bad(top_k=torch.tensor([True, False]))
    with g.case("rejects-list-knob", group=INPUT_CHECKS):
        bad(top_p=[0.9, 0.9])
        bad(temperature=[1.0, 1.0])
    with g.case("rejects-0-dim-float-tensor-top-k", group=INPUT_CHECKS):
        bad(top_k=torch.tensor(2.0))
        bad(top_k=torch.tensor(3.0, dtype=torch.float64))
    with g.case("validates-greedy-rows-too", group=INPUT_CHECKS):
        bad(temperature=0.0, top_p=1.5)
        bad(temperature=0.0, min_p=-1.0)
        bad(temperature=torch.zeros(2), top_k=2.5)
    with g.case("sample-rejects-bad-input", group=INPUT_CHECKS):
        g.raises("ValueError", "sample", x, **{**ok, "top_p": 0.0})
        g.raises("ValueError", "sample", torch.tensor([[NAN, 1.0]], device=dev), **ok)


def _random_case(ref, seed: int, B: int, V: int):
    """Random logits (some rows quantised, to make ties) and per-row or scalar knobs, re-drawn until
    no top-p or min-p comparison is within 1e-7 of its threshold."""
    gen = torch.Generator().manual_seed(seed)
    for attempt in range(50):
        u = lambda *s: torch.rand(*s, generator=gen)  # noqa: E731
        scale = float(u(1)) * 4 + 0.5
        logits = torch.randn(B, V, generator=gen) * scale
        ties = u(B) < 0.4
        logits[ties] = (logits[ties] * 2).round() / 2
        if V > 3:
            logits[u(B, V) < 0.05] = -INF
            logits[:, 0] = logits[:, 0].nan_to_num(neginf=0.0)
        t = torch.where(u(B) < 0.15, 0.0, u(B) * 1.8 + 0.2)
        k = torch.where(u(B) < 0.3, 0, torch.randint(-1, V + 2, (B,), generator=gen))
        p = torch.where(u(B) < 0.25, 1.0, u(B) * 0.95 + 0.03)
        m = torch.where(u(B) < 0.4, 0.0, u(B) * 0.5)
        order = [HF[j] for j in torch.randperm(4, generator=gen)]
        form = int(torch.randint(0, 3, (1,), generator=gen))
        knobs = dict(temperature=t, top_k=k.to(torch.int32), top_p=p.double(), min_p=m, order=order)
        if form == 1:   # scalars
            knobs.update(temperature=float(t[0]) or 0.8, top_k=int(k[0]), top_p=float(p[0]), min_p=float(m[0]))
        elif form == 2:  # mixed
            knobs.update(temperature=round(float(t[1]) or 1.1, 3), min_p=float(m[0]))
        if _robust(ref, logits, knobs):
            return logits, knobs
    raise AssertionError(f"no robust random case for seed {seed}")


def _near_threshold_rows(gen: torch.Generator, B: int, V: int = 8, margin: float = 1.5e-8):
    """float64 logits (B, V) with per-row top_p and min_p that sit `margin` above or below (rows
    alternate) the mass, or the probability ratio, that decides one token."""
    q = torch.rand(B, V, generator=gen, dtype=torch.float64) + 0.05
    x = q.log()
    probs = x.softmax(dim=-1)
    s = probs.sort(dim=-1, descending=True).values
    j = torch.randint(1, V - 1, (B,), generator=gen)
    sign = torch.tensor([1.0 if r % 2 == 0 else -1.0 for r in range(B)], dtype=torch.float64)
    mass_before = (s.cumsum(dim=-1) - s).gather(-1, j[:, None])[:, 0]
    ratio = (s.gather(-1, j[:, None])[:, 0] / s[:, 0])
    return x, mass_before + sign * margin, ratio - sign * margin / s[:, 0]   # both gaps: margin


def _robust(ref, logits, knobs) -> bool:
    """True when moving top_p and min_p by +-1e-7 (where not 0 or 1) leaves the support unchanged."""
    base = ref.sampling_probs(logits, **knobs) > 0
    B = logits.shape[0]
    for dp, dm in ((1e-7, 0), (-1e-7, 0), (0, 1e-7), (0, -1e-7)):
        p = torch.as_tensor(knobs["top_p"], dtype=torch.float64).expand(B)
        m = torch.as_tensor(knobs["min_p"], dtype=torch.float64).expand(B)
        p = torch.where(p < 1, (p + dp).clamp(1e-12, 1.0), p)
        m = torch.where((m > 0) & (m < 1), (m + dm).clamp(0.0, 1.0), m)
        if not torch.equal(ref.sampling_probs(logits, **{**knobs, "top_p": p, "min_p": m}) > 0, base):
            return False
    return True
