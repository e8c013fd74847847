"""Hidden cases for speculative-decoding-basics.

expected_tokens: a grid of acceptances (0, 1, binary-exact and decimal values, up to 1 - 2^-10)
and draft lengths 0..63 against the exact rational sum; emitted_distribution: equal, disjoint,
one-hot, half-overlapping and salted random rational distributions, checked term by term and
against the identity emitted == p; spare_compute_batch: the tabled GPUs in BF16/FP16/FP8, a
made-up GPU, KV dtypes that differ from the weights' (FP8 weights with a BF16 cache and back), a
big-vocabulary model (where the logit rows matter), TP degrees and efficiencies, draft lengths
0..400, and power-of-two configs whose batch lands exactly on the memory/compute tie. Then the
input checks."""

from __future__ import annotations

import dataclasses
import math
import random
from fractions import Fraction

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType, ModelConfig

SLUG = "speculative-decoding-basics"

# A Gemma-2B-like shape: the LM head is a fifth of the weights, so leaving the logit rows'
# FLOPs out moves the batch.
BIG_VOCAB = ModelConfig(name="big-vocab-2b", n_layers=18, hidden_size=2048, n_heads=8,
                        n_kv_heads=1, head_dim=256, ffn_size=16384, vocab_size=256000,
                        tied_embeddings=True)
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", bf16_dense_flops=611e12,
                              fp8_dense_flops=1.3e15, hbm_bytes_per_s=2.71e12)
# Powers of two everywhere: the knee is an exact integer and ties are exact in any order.
TOY = ModelConfig(name="toy", n_layers=2, hidden_size=8, n_heads=4, n_kv_heads=2, head_dim=2,
                  ffn_size=16, vocab_size=32)
TOY_GPU = dataclasses.replace(specs.H100_SXM, name="toy-gpu", hbm_bytes_per_s=2.0**10,
                              bf16_dense_flops=2.0**14, fp8_dense_flops=2.0**15)


def _exact_tokens(alpha: float, g: int) -> float:
    a = Fraction(alpha)
    return float(sum((a ** i for i in range(g + 1)), Fraction(0)))


def _fr(x) -> Fraction | None:
    if not isinstance(x, str):
        return None
    try:
        return Fraction(x)
    except (ValueError, ZeroDivisionError):
        return None


def _check_dist(out, p: list[str], exp: dict) -> None:
    keys = ("alpha", "accepted", "resampled", "emitted")
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {list(keys)}")
    a = _fr(out["alpha"])
    if a is None:
        fail("['alpha']: expected a fraction string such as '7/10'")
    if a != Fraction(exp["alpha"]):
        fail(f"['alpha']: got {out['alpha']}, expected {exp['alpha']}")
    V = len(p)
    for k in ("accepted", "resampled", "emitted"):
        v = out[k]
        if not isinstance(v, (list, tuple)) or len(v) != V:
            fail(f"[{k!r}]: expected a list of {V} fraction strings")
        for i, x in enumerate(v):
            f = _fr(x)
            if f is None:
                fail(f"[{k!r}][{i}]: {x!r} is not a fraction string")
            if f != Fraction(exp[k][i]):
                if k == "emitted":
                    fail(f"['emitted'][{i}] = {f} differs from p[{i}] = {p[i]}: the rule is not lossless")
                fail(f"[{k!r}][{i}]: got {f}, expected {exp[k][i]}")


def _random_dist(rng: random.Random, V: int, zeros: float) -> list[Fraction]:
    hi = rng.choice([3, 50, 1000, 3**13])
    w = [0 if rng.random() < zeros else rng.randint(1, hi) for _ in range(V)]
    if sum(w) == 0:
        w[rng.randrange(V)] = 1
    return [Fraction(x, sum(w)) for x in w]


def _strs(xs) -> list[str]:
    return [str(Fraction(x)) for x in xs]


def _sm(model, gpu, n=1, dtype=DType.BF16, mfu=1.0, mbu=1.0, t=0.0, kv=None) -> StepModel:
    return StepModel(model, gpu, n, dtype=dtype, kv_dtype=dtype if kv is None else kv, mfu=mfu,
                     mbu=mbu, t_fixed_s=t)


def _spare_cases() -> list[tuple[str, StepModel, int]]:
    cases = []
    S = specs
    for g in (0, 1, 2, 4, 7):
        cases.append((f"70b-tp8-h100-peak-g{g}", _sm(S.LLAMA_3_1_70B, S.H100_SXM, 8), g))
        cases.append((f"70b-tp8-h100-s-spec-g{g}",
                      _sm(S.LLAMA_3_1_70B, S.H100_SXM, 8, mfu=0.6, mbu=0.8, t=0.003), g))
    for gpu in (S.H200_SXM, S.B200, S.A100_SXM_80GB, ODD_GPU):
        for g in (1, 3, 5):
            cases.append((f"8b-{gpu.name.lower().replace(' ', '-')}-g{g}",
                          _sm(S.LLAMA_3_1_8B, gpu, 1, mfu=0.7, mbu=0.9), g))
    for gpu in (S.H100_SXM, S.H200_SXM, S.B200, ODD_GPU):
        for g in (0, 2, 4):
            cases.append((f"fp8-70b-tp4-{gpu.name.lower().replace(' ', '-')}-g{g}",
                          _sm(S.LLAMA_3_1_70B, gpu, 4, dtype=DType.FP8, mfu=0.5, mbu=0.85), g))
    # KV dtype != weight dtype: W and F follow dtype alone (on the made-up GPU the FP8 peak is not
    # twice the BF16 one, so taking either from kv_dtype moves the knee by 6% and max_batch).
    for g in (0, 2, 4):
        cases.append((f"fp8-weights-bf16-kv-70b-tp4-h100-g{g}",
                      _sm(S.LLAMA_3_1_70B, S.H100_SXM, 4, dtype=DType.FP8, mfu=0.5, mbu=0.85,
                          kv=DType.BF16), g))
    for g in (0, 1, 3):
        cases.append((f"fp8-weights-bf16-kv-8b-odd-gpu-g{g}",
                      _sm(S.LLAMA_3_1_8B, ODD_GPU, 1, dtype=DType.FP8, kv=DType.BF16), g))
    for g in (0, 2):
        cases.append((f"fp8-weights-bf16-kv-big-vocab-odd-gpu-tp2-g{g}",
                      _sm(BIG_VOCAB, ODD_GPU, 2, dtype=DType.FP8, mfu=0.7, mbu=0.9, kv=DType.BF16), g))
    for g in (1, 3):
        cases.append((f"bf16-weights-fp8-kv-8b-odd-gpu-g{g}",
                      _sm(S.LLAMA_3_1_8B, ODD_GPU, 1, kv=DType.FP8), g))
    cases.append(("fp16-8b-h100-g3", _sm(S.LLAMA_3_1_8B, S.H100_SXM, 1, dtype=DType.FP16), 3))
    for g in (0, 1, 3, 6):
        cases.append((f"big-vocab-h100-g{g}", _sm(BIG_VOCAB, S.H100_SXM, 1, mfu=0.65, mbu=0.8), g))
        cases.append((f"big-vocab-odd-gpu-tp2-g{g}", _sm(BIG_VOCAB, ODD_GPU, 2), g))
    cases.append(("long-draft-a100-g400", _sm(S.LLAMA_3_1_8B, S.A100_SXM_80GB, 1), 400))
    cases.append(("long-draft-h100-g294", _sm(S.LLAMA_3_1_8B, S.H100_SXM, 1), 294))
    cases.append(("long-draft-h100-g295", _sm(S.LLAMA_3_1_8B, S.H100_SXM, 1), 295))
    # exact ties: knee = s_w F / (2 BW) = 16 (32 for the last), so b (g+1) = knee is memory-bound
    cases.append(("tie-toy-g0", _sm(TOY, TOY_GPU), 0))
    cases.append(("tie-toy-g1", _sm(TOY, TOY_GPU), 1))
    cases.append(("tie-toy-g3", _sm(TOY, TOY_GPU), 3))
    cases.append(("tie-toy-fp8-g3", _sm(TOY, TOY_GPU, dtype=DType.FP8), 3))
    cases.append(("tie-toy-tp4-g7", _sm(TOY, TOY_GPU, 4, mfu=0.5, mbu=0.25), 7))
    cases.append(("toy-g2", _sm(TOY, TOY_GPU), 2))
    return cases


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"{SLUG}:{g.salt}")

    # -- expected_tokens --
    alphas = [0.0, 0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 1 - 2.0**-10, 1.0, 0.123456789]
    alphas.append(round(rng.uniform(0.05, 0.95), 6))
    for a in alphas:
        for gl in (0, 1, 2, 3, 4, 7, 16, 63):
            with g.case(f"tokens-alpha{a:g}-g{gl}"):
                out = g.call("expected_tokens", a, gl)
                expect_close(out, _exact_tokens(a, gl), name="expected_tokens", rtol=1e-9)
    with g.case("tokens-alpha-int-1"):
        expect_close(g.call("expected_tokens", 1, 5), 6.0, name="expected_tokens", rtol=1e-9)

    # -- emitted_distribution --
    F = Fraction
    fixed = [
        ("three-token-example", [F(1, 2), F(3, 10), F(1, 5)], [F(1, 5), F(1, 2), F(3, 10)]),
        ("draft-equals-target", [F(1, 3), F(1, 6), F(1, 2)], [F(1, 3), F(1, 6), F(1, 2)]),
        ("one-token-vocab", [F(1)], [F(1)]),
        ("disjoint-supports", [F(1, 2), F(1, 2), 0, 0], [0, 0, F(1, 4), F(3, 4)]),
        ("one-hot-target", [0, 1, 0], [F(1, 3), F(1, 3), F(1, 3)]),
        ("one-hot-draft", [F(1, 4), F(1, 4), F(1, 2)], [0, 0, 1]),
        ("draft-misses-tokens", [F(1, 10), F(2, 10), F(3, 10), F(4, 10)], [F(1, 2), F(1, 2), 0, 0]),
        ("target-misses-tokens", [F(1, 2), F(1, 2), 0, 0], [F(1, 10), F(2, 10), F(3, 10), F(4, 10)]),
        ("swap", [F(9, 10), F(1, 10)], [F(1, 10), F(9, 10)]),
    ]
    for i in range(8):
        V = rng.choice([2, 3, 5, 8, 17, 64])
        z = rng.choice([0.0, 0.3])
        fixed.append((f"random-{i}-v{V}", _random_dist(rng, V, z), _random_dist(rng, V, z)))
    for name, p, q in fixed:
        with g.case(f"dist-{name}"):
            ps, qs = _strs(p), _strs(q)
            _check_dist(g.call("emitted_distribution", ps, qs), ps, ref.emitted_distribution(ps, qs))
    with g.case("dist-unreduced-and-decimal-strings"):
        ps, qs = ["2/4", "0.3", "1/5"], ["0.2", "5/10", "3/10"]
        _check_dist(g.call("emitted_distribution", ps, qs), ["1/2", "3/10", "1/5"],
                    ref.emitted_distribution(ps, qs))

    # -- spare_compute_batch --
    for name, sm, gl in _spare_cases():
        with g.case(f"spare-{name}"):
            out = g.call("spare_compute_batch", sm, gl)
            exp = ref.spare_compute_batch(sm, gl)
            if not isinstance(out, dict) or set(out) != {"knee_tokens", "max_batch"}:
                fail("expected a dict with exactly the keys ['knee_tokens', 'max_batch']")
            expect_close(out["knee_tokens"], exp["knee_tokens"], name="['knee_tokens']", rtol=1e-9)
            expect_equal(out["max_batch"], exp["max_batch"], name="['max_batch']")

    # -- input checks --
    checks = [
        ("tokens-alpha-negative", "expected_tokens", (-0.1, 3)),
        ("tokens-alpha-above-one", "expected_tokens", (1.5, 3)),
        ("tokens-alpha-nan", "expected_tokens", (math.nan, 3)),
        ("tokens-g-negative", "expected_tokens", (0.8, -1)),
        ("tokens-g-float", "expected_tokens", (0.8, 4.0)),
        ("dist-lengths-differ", "emitted_distribution", (["1/2", "1/2"], ["1/3", "1/3", "1/3"])),
        ("dist-p-sums-below-one", "emitted_distribution", (["1/2", "1/4"], ["1/2", "1/2"])),
        ("dist-q-sums-above-one", "emitted_distribution", (["1/2", "1/2"], ["3/4", "1/2"])),
        ("dist-negative", "emitted_distribution", (["3/2", "-1/2"], ["1/2", "1/2"])),
        ("dist-empty", "emitted_distribution", ([], [])),
        ("dist-floats-not-strings", "emitted_distribution", ([0.5, 0.5], [0.25, 0.75])),
        ("dist-not-a-number", "emitted_distribution", (["1/2", "half"], ["1/2", "1/2"])),
        ("spare-g-negative", "spare_compute_batch", (_sm(specs.LLAMA_3_1_8B, specs.H100_SXM), -1)),
        ("dist-a-string-not-a-list", "emitted_distribution", ("1", ["1"])),
        ("spare-not-a-step-model", "spare_compute_batch", ("llama-3.1-8b", 2)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
