"""Hidden grader for moe-calibration.

1. ``expert_token_counts`` on routing traces: router logits with Zipf-skewed expert biases (some
   experts get no token), exact ties (bf16 logits, a hand-made tie row), float64 near-ties (2**-40
   apart, equal once cast to float32), an empty batch.
2. ``expected_tokens`` on Zipf shares (DeepSeek-V3's 256 experts, top-8, 262,144 tokens), a rare
   expert, k * share = 1, no tokens.
3. ``rtn_quantize`` and ``gptq_quantize`` against the pinned GPTQ on hidden weights and inputs: a
   rounding tie, zero and one-signed rows, dead input columns holding a row's extreme weight, fewer
   tokens than input dimensions, one token, no token and all-zero inputs (fallback), act-order with
   tied Hessian diagonals, partial blocks, 2 to 8 bits, float32 inputs.
4. ``gptq_vs_rtn`` on a decaying-spectrum input distribution (the crossover near n = d_in), GPTQ
   equal to RTN (diagonal X^T X; the mean lands one ulp below RTN), GPTQ better by less than the
   1e-6 margin and then by more (a rounding tie flipped), and ``calibration_plan`` with counts
   exactly at the threshold.
"""

from __future__ import annotations

import math
import random

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_close, expect_equal, expect_tensor, fail


def _zipf_logits(seed: int, n: int, e: int, alpha: float, dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    pop = torch.arange(1, e + 1, dtype=torch.float64) ** -alpha
    bias = torch.log(pop[torch.randperm(e, generator=g)]) * 3.0
    return (torch.randn(n, e, generator=g, dtype=torch.float64) + bias).to(dtype)


def _near_tie_logits(seed: int, n: int, e: int) -> torch.Tensor:
    """float64 logits 1..4 plus offsets of k * 2**-40 (|k| <= 3): distinct in float64, equal once
    cast to float32 or lower (whose tie rule would then pick the lower id). Binary-exact."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randint(1, 5, (n, e), generator=g).to(torch.float64)
    off = torch.randint(-3, 4, (n, e), generator=g).to(torch.float64) * 2.0 ** -40
    hand = torch.tensor([[1.0, 1.0 + 2.0 ** -40, 0.0] + [0.0] * (e - 3),
                         [2.0, 2.0, 2.0 + 2.0 ** -38, 2.0 - 2.0 ** -38] + [1.0] * (e - 4)], dtype=torch.float64)
    return torch.cat([hand, base + off])


def _shares(e: int, alpha: float, rare: float | None = None) -> list[float]:
    pi = [(r + 1) ** -alpha for r in range(e)]
    s = math.fsum(pi)
    pi = [p / s for p in pi]
    if rare is not None:
        pi[-1] = rare
        rest = math.fsum(pi[:-1])
        pi[:-1] = [p * (1.0 - rare) / rest for p in pi[:-1]]
    return pi


def _spectrum_inputs(g: torch.Generator, d: int):
    U, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    return U * torch.logspace(0, -2, d, dtype=torch.float64).sqrt()


def _check_list(out, exp, name, rtol, atol=0.0):
    if not isinstance(out, (list, tuple)) or len(out) != len(exp):
        fail(f"{name}: expected a list of {len(exp)} numbers")
    for i, (a, e) in enumerate(zip(out, exp)):
        expect_close(a, e, name=f"{name}[{i}]", rtol=rtol, atol=atol)


def _check_w(out, exp, W):
    tol = 1e-9 * float(W.abs().max())
    expect_tensor(out, exp, name="W_hat", rtol=0.0, atol=tol, dtype=torch.float64)


def _check_expected(g: Grading, ref, pi, n, k) -> None:
    out = g.call("expected_tokens", pi, n, k)
    exp = ref.expected_tokens(pi, n, k)
    if not isinstance(out, dict) or set(out) != set(exp):
        fail("expected_tokens must return a dict with exactly the keys ['expected', 'p_zero']")
    _check_list(out["expected"], exp["expected"], "['expected']", 1e-9)
    _check_list(out["p_zero"], exp["p_zero"], "['p_zero']", 1e-6, 1e-300)


def _check_gptq(g: Grading, ref, W, X, bits, damp, block, act) -> None:
    out = g.call("gptq_quantize", W.to(g.device), X.to(g.device), bits, damp, block, act)
    _check_w(out, ref.gptq_quantize(W, X, bits, damp, block, act).to(g.device), W)


def _check_crossover(g: Grading, ref, W, Xc, Xt, grid, bits, damp) -> None:
    dev = g.device
    out = g.call("gptq_vs_rtn", W.to(dev), Xc.to(dev), Xt.to(dev), grid, bits, damp)
    exp = ref.gptq_vs_rtn(W, Xc, Xt, grid, bits, damp)
    if not isinstance(out, dict) or set(out) != set(exp):
        fail("gptq_vs_rtn must return a dict with exactly the keys "
             "['crossover', 'gptq_errors', 'rtn_error']")
    expect_close(out["rtn_error"], exp["rtn_error"], name="['rtn_error']", rtol=1e-9)
    _check_list(out["gptq_errors"], exp["gptq_errors"], "['gptq_errors']", 1e-7)
    # acceptable crossovers: the decision may flip only within 1e-9 of the margin
    thr = (1.0 - ref.WIN_MARGIN) * exp["rtn_error"]
    lo = next((n for n, e in zip(grid, exp["gptq_errors"]) if e < thr * (1 + 1e-9)), None)
    hi = next((n for n, e in zip(grid, exp["gptq_errors"]) if e < thr * (1 - 1e-9)), None)
    c = out["crossover"]
    if c not in {lo, hi} or isinstance(c, bool) or not (c is None or isinstance(c, int)):
        fail("['crossover']: not the smallest n of the grid where GPTQ's mean error is below "
             "(1 - 1e-6) x RTN's")


def _ce_weights(trial: Trial, rows: int, cols: int) -> torch.Tensor:
    """Weights on a quarter grid (rounding ties at every bit width), with a zero row and one-signed rows."""
    W = torch.randint(-16, 17, (rows, cols), generator=trial.generator()).to(torch.float64) / 4
    pick = trial.rng.random()
    if pick < 0.25:
        W[trial.rng.randrange(rows)] = 0.0
    elif pick < 0.5:
        W = W.abs() * trial.rng.choice([1.0, -1.0])
    elif pick < 0.75:
        W = torch.randn(rows, cols, generator=trial.generator(), dtype=torch.float64)
    return W


def _ce_inputs(trial: Trial, n: int, d: int) -> torch.Tensor:
    """Calibration inputs: small integers (exact Hessians) with dead and tied columns, or Gaussians."""
    rng, gen = trial.rng, trial.generator()
    if rng.random() < 0.5:
        X = torch.randn(n, d, generator=gen, dtype=torch.float64)
    else:
        X = torch.randint(-3, 4, (n, d), generator=gen).to(torch.float64)
    if d >= 3 and rng.random() < 0.5:
        a, b, c = rng.sample(range(d), 3)
        X[:, b] = rng.choice([1.0, -1.0]) * X[:, a]                 # equal Hessian diagonals
        if rng.random() < 0.5:
            X[:, c] = 0.0                                           # a dead column
    return X


def _ce_counts(g: Grading, ref, trial: Trial) -> None:
    rng, gen = trial.rng, trial.generator()
    n, e = rng.randint(0, 2 * trial.size), rng.randint(2, 6)
    k = rng.randint(1, e)
    mode = rng.choice(["ties", "near-ties", "zipf"])
    if mode == "ties":
        logits = torch.randint(0, 3, (n, e), generator=gen).to(rng.choice([torch.float64, torch.bfloat16]))
    elif mode == "near-ties":
        logits = torch.randint(1, 3, (n, e), generator=gen).to(torch.float64) + \
            torch.randint(-2, 3, (n, e), generator=gen).to(torch.float64) * 2.0 ** -40
    else:
        logits = _zipf_logits(rng.randrange(1 << 62), n, e, rng.choice([0.5, 1.2]),
                              rng.choice([torch.float32, torch.float64, torch.bfloat16]))
    g.show_input(router_logits=logits, top_k=k)
    out = g.call("expert_token_counts", logits.to(g.device), k)
    expect_equal(out, ref.expert_token_counts(logits, k), name="counts")


def _ce_expected(g: Grading, ref, trial: Trial) -> None:
    rng = trial.rng
    e = rng.randint(1, 2 + trial.size)
    k = rng.randint(1, e)
    pi = _shares(e, rng.choice([0.0, 0.5, 1.2]), rare=rng.choice([None, 1e-6, 1.0 / e]) if e > 1 else None)
    while k > 1 and k * max(pi) > 1.0:
        k -= 1
    n = rng.choice([0, 1, rng.randint(2, 100), rng.randint(1000, 300000)])
    g.show_input(routing_share=pi, num_tokens=n, top_k=k)
    _check_expected(g, ref, pi, n, k)


def _ce_rtn(g: Grading, ref, trial: Trial) -> None:
    W, bits = _ce_weights(trial, trial.size, trial.rng.randint(1, 6)), trial.rng.randint(2, 8)
    if trial.rng.random() < 0.3:
        W = W.float()
    g.show_input(W=W, bits=bits)
    _check_w(g.call("rtn_quantize", W.to(g.device), bits), ref.rtn_quantize(W, bits).to(g.device), W)


def _ce_gptq(g: Grading, ref, trial: Trial) -> None:
    rng = trial.rng
    d = rng.randint(2, 6)
    W, X = _ce_weights(trial, trial.size, d), _ce_inputs(trial, rng.randint(0, 2 * d), d)
    bits, damp, block, act = rng.randint(2, 4), rng.choice([0.01, 0.1, 1.0]), rng.randint(1, d + 1), rng.random() < 0.5
    if rng.random() < 0.2:
        W, X = W.float(), X.float()
    g.show_input(W=W, X=X, bits=bits, damp=damp, block_size=block, act_order=act)
    _check_gptq(g, ref, W, X, bits, damp, block, act)


def _ce_crossover(g: Grading, ref, trial: Trial) -> None:
    rng = trial.rng
    d, R = rng.randint(2, 5), rng.randint(1, 3)
    grid = sorted(rng.sample(range(0, 4 * d + 1), rng.randint(1, 4)))
    W = _ce_weights(trial, rng.randint(1, 3), d)
    W[0, 0] = W[0, 0] if bool(W.any()) else 1.0     # X_test @ W.T must not be all zero
    Xc = torch.stack([_ce_inputs(trial, grid[-1], d) for _ in range(R)])
    Xt = torch.randn(rng.randint(1, 8), d, generator=trial.generator(), dtype=torch.float64)
    bits, damp = rng.randint(2, 4), rng.choice([0.01, 0.1])
    g.show_input(W=W, X_calib=Xc, X_test=Xt, grid=grid, bits=bits, damp=damp)
    _check_crossover(g, ref, W, Xc, Xt, grid, bits, damp)


def _ce_plan(g: Grading, ref, trial: Trial) -> None:
    rng = trial.rng
    d, r = rng.randint(1, 16), rng.choice([0.5, 1, 1.5, 2.0])
    need = r * d
    around = lambda: max(0, int(need) + rng.randint(-2, 1))  # noqa: E731 - counts at and near the threshold
    routed = [rng.choice([0, around(), rng.randint(0, 3 * d)]) for _ in range(trial.size)]
    targeted = [rng.choice([0, max(0, around() - x), rng.randint(0, 2 * d)]) for x in routed]
    g.show_input(routed_counts=routed, targeted_counts=targeted, d_in=d, min_tokens_per_dim=r)
    expect_equal(g.call("calibration_plan", routed, targeted, d, r), ref.calibration_plan(routed, targeted, d, r),
                 name="plan")


_CE_KINDS = {"counts-": _ce_counts, "expected-": _ce_expected, "rtn-": _ce_rtn, "gptq-": _ce_gptq,
             "crossover-": _ce_crossover, "plan-": _ce_plan}


def counterexample(g: Grading, trial: Trial) -> None:
    """A small fresh input of a failed case's kind: routing logits with exact and near ties, a few
    experts' shares, quarter-grid weights (rounding ties) with integer calibration inputs that have
    dead and tied columns, a small crossover grid, or counts at the plan's threshold."""
    kind = trial.pick({prefix: prefix for prefix in _CE_KINDS}) or "gptq-"
    _CE_KINDS[kind](g, g.reference(), trial)


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"moe-calibration:{g.salt}")
    dev = g.device

    # 1. tokens per expert from routing traces
    traces = [("tie-row", torch.tensor([[1.0, 1.0, 1.0, 0.0], [0.0, 2.0, 2.0, 2.0], [5.0, 5.0, 5.0, 5.0]],
                                       dtype=torch.float64), 2),
              ("zipf0.8-f32", _zipf_logits(1, 3000, 64, 0.8, torch.float32), 6),
              ("zipf1.2-f64", _zipf_logits(2, 2000, 128, 1.2, torch.float64), 8),
              ("bf16-ties", _zipf_logits(3, 1500, 32, 0.5, torch.bfloat16), 4),
              ("uniform-top1", _zipf_logits(4, 500, 16, 0.0, torch.float64), 1),
              ("f64-near-ties", _near_tie_logits(5, 400, 16), 4),
              ("empty", torch.zeros(0, 12, dtype=torch.float32), 3),
              ("top-k-all-experts", torch.tensor([[1.0, 1.0, 1.0, 0.0], [0.0, 2.0, 2.0, 2.0]],
                                                 dtype=torch.float64), 4)]
    for name, logits, k in traces:
        with g.case(f"counts-{name}"):
            out = g.call("expert_token_counts", logits.to(dev), k)
            expect_equal(out, ref.expert_token_counts(logits, k), name="counts")

    # 2. expected tokens
    exp_cases = [("zipf0", _shares(256, 0.0), 262144, 8), ("zipf0.8", _shares(256, 0.8), 262144, 8),
                 ("zipf0.5", _shares(256, 0.5), 262144, 8),
                 ("rare-expert", _shares(256, 0.0, rare=1e-5 / 8), 262144, 8),
                 ("made-up-60", _shares(60, 0.6), 50000, 4), ("k-times-share-one", [0.5, 0.5], 7, 2),
                 ("no-tokens", _shares(8, 1.0), 0, 2), ("zero-share-top1", [0.5, 0.25, 0.0, 0.25], 100, 1)]
    for name, pi, n, k in exp_cases:
        with g.case(f"expected-{name}"):
            _check_expected(g, ref, pi, n, k)

    # 3. the quantizers
    tie = torch.tensor([[-3.0, 12.0, 2.5, 0.5, -1.5, 7.5, 0.0, 4.5],
                        [0.0] * 8,
                        [0.25, 1.0, 0.5, 0.75, 0.125, 0.3, 0.9, 0.6],
                        [-0.25, -1.0, -0.5, -0.75, -0.125, -0.3, -0.9, -0.6]], dtype=torch.float64)
    g0 = torch.Generator().manual_seed(11)
    rtn_cases = [("ties-zero-row-one-signed-4bit", tie, 4),
                 ("random-3bit", torch.randn(48, 40, generator=g0, dtype=torch.float64), 3),
                 ("random-2bit", torch.randn(16, 64, generator=g0, dtype=torch.float64), 2),
                 ("random-8bit-f32", torch.randn(32, 24, generator=g0, dtype=torch.float32), 8),
                 ("one-weight-3bit", torch.tensor([[-0.7]], dtype=torch.float64), 3)]
    for name, W, bits in rtn_cases:
        with g.case(f"rtn-{name}"):
            _check_w(g.call("rtn_quantize", W.to(dev), bits), ref.rtn_quantize(W, bits).to(dev), W)

    def gptq_case(name, W, X, bits, damp=0.01, block=128, act=False):
        with g.case(f"gptq-{name}"):
            _check_gptq(g, ref, W, X, bits, damp, block, act)

    g1 = torch.Generator().manual_seed(21)
    A = _spectrum_inputs(g1, 40)
    W = torch.randn(48, 40, generator=g1, dtype=torch.float64) / 40 ** 0.5
    Xmany = torch.randn(300, 40, generator=g1, dtype=torch.float64) @ A.T
    gptq_case("n300-d40-4bit", W, Xmany, 4)
    gptq_case("n300-d40-block8", W, Xmany, 4, block=8)
    gptq_case("n300-d40-block7-3bit-damp0.1", W, Xmany, 3, damp=0.1, block=7)
    gptq_case("n60-block1", W, Xmany[:60], 4, block=1)
    gptq_case("fewer-tokens-than-dims-n12", W, Xmany[:12], 4)
    gptq_case("one-token", W, Xmany[:1], 4)
    gptq_case("8bit-damp1", W, Xmany[:50], 8, damp=1.0)
    Xdead = Xmany[:80].clone()
    Xdead[:, [3, 17, 39]] = 0.0
    Wdead = W.clone()
    Wdead[5, 17] = 3.0          # the row's maximum sits in a dead column
    Wdead[9, 3] = -3.0          # and a minimum
    gptq_case("dead-columns-hold-extremes", Wdead, Xdead, 4)
    Xtie = Xmany[:120].clone()
    Xtie[:, 10] = Xtie[:, 2]    # equal Hessian diagonals: act-order's tie rule decides
    Xtie[:, 25] = -Xtie[:, 2]
    Xtie[:, [6, 30]] = 0.0      # two dead columns, diagonal 1 after the fix
    gptq_case("act-order-ties-and-dead", W, Xtie, 4, act=True)
    gptq_case("act-order-block16-2bit", W, Xmany[:64], 2, block=16, act=True)
    gptq_case("no-tokens-falls-back", W, Xmany[:0], 4)
    gptq_case("all-zero-inputs-fall-back", W, torch.zeros(9, 40, dtype=torch.float64), 4)
    gptq_case("float32-inputs", W.float(), Xmany[:100].float(), 4)

    # 4. where GPTQ stops losing to RTN
    def crossover_case(name, W, Xc, Xt, grid, bits, damp):
        with g.case(f"crossover-{name}"):
            _check_crossover(g, ref, W, Xc, Xt, grid, bits, damp)

    for i, (d, dout, R, damp, grid) in enumerate([
            (32, 48, 3, 0.01, [0, 1, 4, 8, 16, 24, 32, 48, 64, 128]),
            (48, 32, 2, 0.1, [0, 2, 12, 24, 36, 48, 96]),
            (24, 40, 2, 0.01, [0, 1, 3, 6, 12])]):
        gg = torch.Generator().manual_seed(400 + i)
        A = _spectrum_inputs(gg, d)
        W = torch.randn(dout, d, generator=gg, dtype=torch.float64) / d ** 0.5
        Xc = torch.randn(R, grid[-1], d, generator=gg, dtype=torch.float64) @ A.T
        Xt = torch.randn(2048, d, generator=gg, dtype=torch.float64) @ A.T
        crossover_case(f"d{d}-damp{damp}", W, Xc, Xt, grid, 4, damp)

    # GPTQ equal to RTN for n >= d_in: every calibration token activates one column, so X^T X is
    # diagonal, Hinv has no off-diagonal terms and no error is fed forward. The mean of the three
    # equal draws lands one ulp below RTN's error here (binary-exact W and X_test): not a win.
    W = torch.tensor([[-2.0, 5.0, -1.125, 4.0], [-2.0, 5.0, 3.375, -1.75], [-2.0, 5.0, 2.25, -0.25]],
                     dtype=torch.float64)
    Xt = torch.tensor([[2.0, 3.0, -2.0, -2.0], [2.0, -3.0, 2.0, -3.0], [-2.0, -2.0, 1.0, 2.0],
                       [0.0, 1.0, 0.0, -2.0], [1.0, -3.0, -3.0, -3.0]], dtype=torch.float64)
    Xc = torch.zeros(3, 8, 4, dtype=torch.float64)
    for r in range(3):
        for t in range(8):
            Xc[r, t, t % 4] = float(1 + (3 * r + t) % 4)
    crossover_case("gptq-equals-rtn", W, Xc, Xt, [0, 2, 4, 8], 3, 0.01)
    # one draw, one held-out row, an output norm below 1 (scaled by 2**-8: binary-exact)
    crossover_case("one-draw-one-test-row", W, Xc[:1], Xt[:1] * 2.0 ** -8, [0, 4, 8], 3, 0.01)
    # GPTQ better than RTN by less than the margin, then by more: one weight sits on a rounding tie
    # (1.5 on a step-1 grid; RTN rounds it to 2) and a calibration token with x2 = -x3 makes GPTQ
    # round it to 1. The held-out inputs correlate those columns by -2**-19, so a flip lowers the
    # error by 1.5e-6 x RTN's: one draw of three at n = 5 (0.5e-6, not a win), all three at n = 7.
    W = torch.tensor([[-2.0, 5.0, 0.25, 1.5], [5.0, -2.0, 0.0, 3.0]], dtype=torch.float64)
    single = [[3.0, 0, 0, 0], [0, 2.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 2.0]]
    corr, more = [0, 0, 1.0, -1.0], [[1.0, 0, 0, 0], [0, 1.0, 0, 0]]
    Xc = torch.tensor([single + [corr] + more, single + more + [corr], single + more[::-1] + [corr]],
                      dtype=torch.float64)
    Xt = torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0],
                       [0, 0, 2.0 ** -9, -2.0 ** -10]], dtype=torch.float64)
    crossover_case("within-margin-then-past-it", W, Xc, Xt, [0, 4, 5, 7], 3, 0.01)

    # 5. the plan
    plans = [([128, 127, 0, 64, 500, 63], [0, 1, 128, 63, 0, 0], 128, 1.0),
             ([64, 63, 200, 0], [0, 1, 55, 0], 128, 0.5),
             ([3000, 2047, 2048, 100], [0, 2000, 0, 0], 1024, 2.0),
             ([7, 8, 0], [0, 0, 12], 5, 1.5),
             ([1, 0, 0, 2], [0, 1, 0, 0], 1, 1.0)]
    order = list(range(len(plans)))
    rng.shuffle(order)
    for j in order:
        routed, targeted, d, r = plans[j]
        with g.case(f"plan-{j}"):
            out = g.call("calibration_plan", routed, targeted, d, r)
            expect_equal(out, ref.calibration_plan(routed, targeted, d, r), name="plan")

    # input checks
    W = torch.randn(8, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    X = torch.randn(10, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    Xnan = X.clone()
    Xnan[0, 0] = math.nan
    Winf = W.clone()
    Winf[2, 3] = math.inf
    ints = torch.tensor([[1, 2, 0], [3, 0, 4]])
    checks = [
        ("counts-topk-above-experts", "expert_token_counts", (X, 7)),
        ("counts-topk-zero", "expert_token_counts", (X, 0)),
        ("counts-integer-logits", "expert_token_counts", (ints, 1)),
        ("counts-nan-logit", "expert_token_counts", (Xnan, 2)),
        ("counts-1d", "expert_token_counts", (X[0], 2)),
        ("expected-shares-not-summing-to-one", "expected_tokens", ([0.5, 0.4], 10, 1)),
        ("expected-k-share-above-one", "expected_tokens", ([0.75, 0.25], 10, 2)),
        ("expected-negative-share", "expected_tokens", ([1.25, -0.25], 10, 1)),
        ("expected-nan-share", "expected_tokens", ([math.nan, 0.5, 0.5], 10, 1)),
        ("expected-shares-as-tensor", "expected_tokens", (torch.tensor([0.5, 0.5], dtype=torch.float64), 10, 1)),
        ("expected-fractional-tokens", "expected_tokens", ([0.5, 0.5], 2.5, 1)),
        ("expected-negative-tokens", "expected_tokens", ([0.5, 0.5], -1, 1)),
        ("expected-topk-zero", "expected_tokens", ([0.5, 0.5], 10, 0)),
        ("rtn-one-bit", "rtn_quantize", (W, 1)),
        ("rtn-nine-bits", "rtn_quantize", (W, 9)),
        ("rtn-integer-weights", "rtn_quantize", (ints, 4)),
        ("rtn-inf-weight", "rtn_quantize", (Winf, 4)),
        ("gptq-wrong-d-in", "gptq_quantize", (W, X[:, :5], 4, 0.01, 128, False)),
        ("gptq-zero-damping", "gptq_quantize", (W, X, 4, 0.0, 128, False)),
        ("gptq-nan-input", "gptq_quantize", (W, Xnan, 4, 0.01, 128, False)),
        ("gptq-negative-blocksize", "gptq_quantize", (W, X, 4, 0.01, -1, False)),
        ("gptq-act-order-not-bool", "gptq_quantize", (W, X, 4, 0.01, 128, 1)),
        ("crossover-grid-not-increasing", "gptq_vs_rtn", (W, X[None], X, [4, 2], 4, 0.01)),
        ("crossover-grid-past-n", "gptq_vs_rtn", (W, X[None], X, [2, 11], 4, 0.01)),
        ("crossover-grid-repeated", "gptq_vs_rtn", (W, X[None], X, [0, 2, 2], 4, 0.01)),
        ("crossover-grid-negative", "gptq_vs_rtn", (W, X[None], X, [-1, 2], 4, 0.01)),
        ("crossover-no-draws", "gptq_vs_rtn", (W, X[None][:0], X, [0], 4, 0.01)),
        ("crossover-test-wrong-d-in", "gptq_vs_rtn", (W, X[None], X[:, :5], [0, 2], 4, 0.01)),
        ("crossover-zero-output", "gptq_vs_rtn", (W, X[None], torch.zeros_like(X), [0, 2], 4, 0.01)),
        ("plan-length-mismatch", "calibration_plan", ([1, 2], [1], 4, 1.0)),
        ("plan-negative-count", "calibration_plan", ([1, -2], [1, 0], 4, 1.0)),
        ("plan-negative-targeted-count", "calibration_plan", ([1, 2], [0, -1], 4, 1.0)),
        ("plan-zero-d-in", "calibration_plan", ([1, 2], [0, 1], 0, 1.0)),
        ("plan-zero-min-tokens", "calibration_plan", ([1, 2], [0, 1], 4, 0.0)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
