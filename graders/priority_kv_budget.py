"""Hidden cases for priority-kv-budget.

Step models: the S-spec preset (70B TP8 H100), the 8B on one H100 and on an H200, 70B TP4 on
B200 and TP8 on A100, FP8 and INT4 KV caches, a made-up GQA model on a made-up GPU, a made-up
MQA model with 64 query heads per KV head on a slow-compute GPU (the FLOP side of attention
wins), and a toy model of powers of two where every step time is an exact binary fraction (the
ties of the statement). Interactive batches and contexts are ragged; batch contexts run from 0 to
64K, including short ones past the GEMM knee, and a pool the interactive KV fills exactly (or
misses by one token). Then admission (final vs current KV, the tie), the engine vs the TPOT
policy (memory-bound steps, TPOT-bound steps, an impossible target, no batch sequences, a tie at
the target, slots needed equal to slots free, zero-context victims), and the input checks.
"""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
BUDGET_KEYS = ("base_tpot_s", "max_batch_seqs", "kv_tokens", "kv_bytes", "tpot_at_budget_s",
               "binding")
GUARD_KEYS = ("tpot_before_s", "engine_preempted", "tpot_after_engine_s", "policy_preempted",
              "tpot_after_policy_s", "meets_target")

TOY = ModelConfig(name="toy", n_layers=2, hidden_size=8, n_heads=4, n_kv_heads=2, head_dim=2,
                  ffn_size=16, vocab_size=32)
TOY_GPU = dataclasses.replace(specs.H100_SXM, name="toy-gpu", hbm_bytes_per_s=2.0**10,
                              bf16_dense_flops=2.0**14, fp8_dense_flops=2.0**15)
ODD = ModelConfig(name="odd-gqa", n_layers=40, hidden_size=5120, n_heads=40, n_kv_heads=8,
                  head_dim=128, ffn_size=13824, vocab_size=100352)
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", hbm_bytes_per_s=2.6e12,
                              bf16_dense_flops=700e12, fp8_dense_flops=1400e12)
MQA64 = ModelConfig(name="mqa-64", n_layers=24, hidden_size=4096, n_heads=64, n_kv_heads=1,
                    head_dim=64, ffn_size=11008, vocab_size=50304)
SLOW_GPU = dataclasses.replace(specs.H100_SXM, name="slow-compute", hbm_bytes_per_s=4.0e12,
                               bf16_dense_flops=100e12, fp8_dense_flops=200e12)

S_SPEC = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
MODELS = {
    "s-spec-70b-tp8-h100": S_SPEC,
    "8b-h100": StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002),
    "8b-h200-fp8kv": StepModel(specs.LLAMA_3_1_8B, specs.H200_SXM, 1, kv_dtype=DType.FP8,
                               mfu=0.6, mbu=0.85, t_fixed_s=0.0015),
    "70b-tp4-b200-fp8": StepModel(specs.LLAMA_3_1_70B, specs.B200, 4, dtype=DType.FP8,
                                  kv_dtype=DType.FP8, mfu=0.5, mbu=0.75, t_fixed_s=0.004),
    "70b-tp8-a100": StepModel(specs.LLAMA_3_1_70B, specs.A100_SXM_80GB, 8, mfu=0.55, mbu=0.8,
                              t_fixed_s=0.003),
    "odd-gqa-tp2-madeup": StepModel(ODD, ODD_GPU, 2, mfu=0.45, mbu=0.7, t_fixed_s=0.0025),
    "mqa64-slow-int4kv": StepModel(MQA64, SLOW_GPU, 2, kv_dtype=DType.INT4, mfu=0.3, mbu=0.9,
                                   t_fixed_s=0.001),
}
TOY_SM = StepModel(TOY, TOY_GPU, t_fixed_s=0.5)


def _pool(sm: StepModel) -> int:
    """The notes' pool: 90% of HBM, less the weights' share and 4 GB per GPU."""
    per_gpu = 0.9 * sm.gpu.hbm_bytes - sm.weight_bytes / sm.n_gpus - 4e9
    return int(sm.n_gpus * per_gpu / sm.kv_bytes_per_token)


def _check_dict(out, keys) -> None:
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {list(keys)}")


def _check_budget(out, exp) -> None:
    _check_dict(out, BUDGET_KEYS)
    expect_equal(out["binding"], exp["binding"], name="['binding']")
    for k in ("max_batch_seqs", "kv_tokens"):
        expect_equal(out[k], exp[k], name=f"[{k!r}]")
    for k in ("base_tpot_s", "kv_bytes", "tpot_at_budget_s"):
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def _check_guard(out, exp) -> None:
    _check_dict(out, GUARD_KEYS)
    for k in ("engine_preempted", "policy_preempted"):
        if not isinstance(out[k], (list, tuple)):
            fail(f"[{k!r}]: expected a list of indices")
        expect_equal(list(out[k]), exp[k], name=f"[{k!r}]")
    expect_equal(out["meets_target"], exp["meets_target"], name="['meets_target']")
    for k in ("tpot_before_s", "tpot_after_engine_s", "tpot_after_policy_s"):
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def _safe_target(ref, sm, target, inter, c, pool) -> float:
    """Nudge a target off any step boundary it lies within 1e-9 of (none does by design)."""
    r = ref.batch_kv_budget(sm, target, inter, c, pool)
    n = r["max_batch_seqs"]
    for m in (n, n + 1):
        t = ref._decode_step_s(sm, inter, m, c)
        if abs(t - target) <= 1e-8 * target:
            return _safe_target(ref, sm, target * (1 + 1e-6), inter, c, pool)
    return target


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"priority-kv-budget:{g.salt}")

    # 1. The cost of one held KV token.
    for name, sm in MODELS.items():
        with g.case(f"kv-cost-{name}"):
            expect_close(g.call("kv_cost_per_token_s", sm), ref.kv_cost_per_token_s(sm),
                         name="kv_cost_per_token_s", rtol=RTOL)
    with g.case("kv-cost-toy"):
        expect_close(g.call("kv_cost_per_token_s", TOY_SM), ref.kv_cost_per_token_s(TOY_SM),
                     name="kv_cost_per_token_s", rtol=RTOL)

    # 2. The budget: the question's grid on S-spec, then every model with ragged batches.
    cases = []
    s_pool = _pool(S_SPEC)
    for target in (0.020, 0.025, 0.030):
        for c in (2048, 8192, 32768):
            cases.append((f"budget-s-spec-{int(target * 1e3)}ms-ctx{c}", S_SPEC, target,
                          [4096] * 64, c, s_pool))
    # short contexts, many rows: past the GEMM knee (a KV-only line overshoots)
    cases.append(("budget-s-spec-25ms-ctx512", S_SPEC, 0.025, [1024] * 96, 512, s_pool))
    cases.append(("budget-s-spec-20ms-ctx0", S_SPEC, 0.020, [2048] * 32, 0, s_pool))
    for i, (name, sm) in enumerate(MODELS.items()):
        if name == "s-spec-70b-tp8-h100":
            continue
        for j in range(3):
            r = random.Random(1000 + 10 * i + j)
            inter = [r.randrange(0, 16385) for _ in range(r.randrange(1, 49))]
            c = r.choice([256, 1024, 3000, 8192, 20000, 65536])
            base = ref._decode_step_s(sm, inter)
            target = base * r.choice([1.15, 1.5, 2.2, 3.0])
            pool = _pool(sm) if j < 2 else sum(x + 1 for x in inter) + r.randrange(1, 40) * (c + 1) + r.randrange(0, c + 1)
            cases.append((f"budget-{name}-{j}", sm, target, inter, c, pool))
    # infeasible: the target below the interactive step alone; the pool below their KV
    cases.append(("budget-infeasible-target", S_SPEC, 0.010, [4096] * 64, 8192, s_pool))
    cases.append(("budget-infeasible-pool", S_SPEC, 0.200, [65536] * 64, 8192, 4_000_000))
    # the pool binds exactly where the TPOT does: "tpot" wins the tie
    r20 = ref.batch_kv_budget(S_SPEC, 0.020, [4096] * 64, 8192, s_pool)
    both = 64 * 4097 + r20["max_batch_seqs"] * 8193
    cases.append(("budget-both-bind-at-once", S_SPEC, 0.020, [4096] * 64, 8192, both))
    cases.append(("budget-pool-one-short", S_SPEC, 0.020, [4096] * 64, 8192, both - 1))
    # the interactive KV exactly fills the pool: feasible, no batch sequence, the pool binds;
    # one token less and it is infeasible
    cases.append(("budget-pool-exactly-interactive", S_SPEC, 0.020, [4096] * 64, 8192, 64 * 4097))
    cases.append(("budget-pool-infeasible-by-one", S_SPEC, 0.020, [4096] * 64, 8192,
                  64 * 4097 - 1))
    rng.shuffle(cases)
    for name, sm, target, inter, c, pool in cases:
        if "infeasible" not in name:
            target = _safe_target(ref, sm, target, inter, c, pool)
        with g.case(name):
            _check_budget(g.call("batch_kv_budget", sm, target, inter, c, pool),
                          ref.batch_kv_budget(sm, target, inter, c, pool))
    # exact ties on the toy model: a step equal to the target fits
    toy_inter = [3, 7, 12]
    for n in (0, 5, 40):
        target = ref._decode_step_s(TOY_SM, toy_inter, n, 31)
        with g.case(f"budget-toy-tie-at-target-{n}"):
            _check_budget(g.call("batch_kv_budget", TOY_SM, target, toy_inter, 31, 10**6),
                          ref.batch_kv_budget(TOY_SM, target, toy_inter, 31, 10**6))
    with g.case("budget-tuple-of-contexts"):
        _check_budget(g.call("batch_kv_budget", S_SPEC, 0.02, (4096,) * 8, 8192, s_pool),
                      ref.batch_kv_budget(S_SPEC, 0.02, [4096] * 8, 8192, s_pool))

    # a pool of one token: one interactive sequence at context 0 fills it
    with g.case("budget-pool-of-one"):
        _check_budget(g.call("batch_kv_budget", S_SPEC, 0.030, [0], 10, 1),
                      ref.batch_kv_budget(S_SPEC, 0.030, [0], 10, 1))

    # 3. Admission reserves final KV.
    adm = []
    for j in range(6):
        r = random.Random(2000 + j)
        running = []
        for _ in range(r.randrange(0, 30)):
            mx = r.randrange(1, 4096)
            running.append((r.randrange(1, 32768), r.randrange(0, mx + 1), mx))
        p, mx = r.randrange(1, 32768), r.randrange(1, 4096)
        final = sum(a + m for a, _, m in running) + p + mx
        budget = final + r.choice([-1, 0, 0, 1]) * r.randrange(1, 3) if j % 2 else final
        adm.append((f"admit-{j}", budget, running, p, mx))
    # current KV fits but final does not: generated far below max_tokens
    adm.append(("admit-current-fits-final-does-not", 400_000, [(8000, 10, 2000)] * 40, 8000, 2000))
    adm.append(("admit-nothing-running-tie", 10_000, [], 8000, 2000))
    adm.append(("admit-nothing-running-over", 9_999, [], 8000, 2000))
    adm.append(("admit-zero-budget", 0, [], 1, 1))
    adm.append(("admit-one-token-entries-tie", 6, [(1, 0, 1), (1, 1, 1)], 1, 1))
    adm.append(("admit-lists-not-tuples", 10**6, [[100, 5, 50], [200, 50, 50]], 10, 10))
    rng.shuffle(adm)
    for name, budget, running, p, mx in adm:
        with g.case(name):
            expect_equal(g.call("admit_batch_request", budget, running, p, mx),
                         ref.admit_batch_request(budget, running, p, mx), name="admit")

    # 4. The engine versus the TPOT policy.
    guard = []
    mixed = [8192] * 40 + [32768] * 10 + [2048] * 60
    guard.append(("guard-s-spec-kv-free", S_SPEC, 0.020, [4096] * 64, mixed, 600_000))
    guard.append(("guard-s-spec-kv-short", S_SPEC, 0.020, [4096] * 64, mixed, 150))
    guard.append(("guard-s-spec-kv-short-tpot-met", S_SPEC, 0.030, [4096] * 64, mixed, 120))
    guard.append(("guard-engine-preempts-several", S_SPEC, 0.020, [100] * 8, [0] * 10 + [3] * 5, 14))
    guard.append(("guard-no-batch", S_SPEC, 0.020, [4096] * 64, [], 1000))
    guard.append(("guard-impossible-target", S_SPEC, 0.010, [4096] * 64, mixed[:20], 10**6))
    # slots: needed == free is a fit (the engine preempts nobody); a preempted sequence frees
    # its c tokens *and* drops its own need of a slot (zero-context victims free nothing else)
    guard.append(("guard-engine-slot-tie", S_SPEC, 0.030, [4096] * 64, mixed, 64 + len(mixed)))
    guard.append(("guard-engine-slot-tie-short", S_SPEC, 0.030, [4096] * 8, [100, 100], 10))
    guard.append(("guard-engine-zero-context-victims", S_SPEC, 0.030, [4096] * 8,
                  [2048] * 5 + [0] * 3, 14))
    # one interactive sequence, free slots exactly its need (a one-row step)
    guard.append(("guard-one-interactive-exact-slots", S_SPEC, 0.030, [100], [], 1))
    # a victim frees its own context: the engine's first victim (index 2) frees 0, so it preempts 1
    # too; the policy removes 1 (the largest) and its 50 tokens are enough
    guard.append(("guard-victims-free-their-own-context", S_SPEC, 10.0, [10], [0, 50, 0], 2))
    guard.append(("guard-policy-zero-context-slots", S_SPEC, 0.030, [4096] * 8, [0] * 6, 10))
    for i, (name, sm) in enumerate(MODELS.items()):
        r = random.Random(3000 + i)
        inter = [r.randrange(0, 8193) for _ in range(r.randrange(1, 33))]
        batch = [r.choice([512, 2048, 4096, 8192, 16384, 32768]) for _ in range(r.randrange(1, 120))]
        base = ref._decode_step_s(sm, inter)
        target = base * r.choice([1.1, 1.4, 2.0])
        need = len(inter) + len(batch)
        free = need + r.randrange(0, 1000) if i % 2 else r.randrange(len(inter), need)
        guard.append((f"guard-{name}", sm, target, inter, batch, free))
    rng.shuffle(guard)
    for name, sm, target, inter, batch, free in guard:
        with g.case(name):
            _check_guard(g.call("tpot_guard", sm, target, inter, batch, free),
                         ref.tpot_guard(sm, target, inter, batch, free))
    # toy ties: the policy stops exactly at the target; ties in context remove the latest first
    # largest first, ties latest first: remove 3 (63), then 5 and 2 (31s); 0, 1, 4 remain
    toy_batch = [31, 15, 31, 63, 15, 31]
    target = ref._decode_step_s(TOY_SM, toy_inter + [toy_batch[i] for i in (0, 1, 4)])
    with g.case("guard-toy-tie-at-target"):
        _check_guard(g.call("tpot_guard", TOY_SM, target, toy_inter, toy_batch, 10**6),
                     ref.tpot_guard(TOY_SM, target, toy_inter, toy_batch, 10**6))

    # 5. Input checks.
    sm = S_SPEC
    checks = [
        ("budget-target-zero", "batch_kv_budget", (sm, 0.0, [10], 10, 10**6)),
        ("budget-target-negative", "batch_kv_budget", (sm, -0.02, [10], 10, 10**6)),
        ("budget-target-nan", "batch_kv_budget", (sm, math.nan, [10], 10, 10**6)),
        ("budget-target-inf", "batch_kv_budget", (sm, math.inf, [10], 10, 10**6)),
        ("budget-empty-interactive", "batch_kv_budget", (sm, 0.02, [], 10, 10**6)),
        ("budget-interactive-not-a-list", "batch_kv_budget", (sm, 0.02, 4096, 10, 10**6)),
        ("budget-negative-context", "batch_kv_budget", (sm, 0.02, [10, -1], 10, 10**6)),
        ("budget-float-context", "batch_kv_budget", (sm, 0.02, [10, 2.5], 10, 10**6)),
        ("budget-bool-context", "batch_kv_budget", (sm, 0.02, [True], 10, 10**6)),
        ("budget-negative-batch-ctx", "batch_kv_budget", (sm, 0.02, [10], -5, 10**6)),
        ("budget-float-batch-ctx", "batch_kv_budget", (sm, 0.02, [10], 8192.0, 10**6)),
        ("budget-zero-pool", "batch_kv_budget", (sm, 0.02, [10], 10, 0)),
        ("budget-float-pool", "batch_kv_budget", (sm, 0.02, [10], 10, 1.5e6)),
        ("admit-negative-budget", "admit_batch_request", (-1, [], 10, 10)),
        ("admit-zero-prompt", "admit_batch_request", (100, [], 0, 10)),
        ("admit-zero-max-tokens", "admit_batch_request", (100, [], 10, 0)),
        ("admit-generated-above-max", "admit_batch_request", (10**6, [(100, 60, 50)], 10, 10)),
        ("admit-short-entry", "admit_batch_request", (10**6, [(100, 50)], 10, 10)),
        ("admit-negative-generated", "admit_batch_request", (10**6, [(100, -1, 50)], 10, 10)),
        ("admit-running-not-a-list", "admit_batch_request", (10**6, 5, 10, 10)),
        ("admit-running-zero-prompt", "admit_batch_request", (10**6, [(0, 0, 5)], 10, 10)),
        ("admit-running-zero-max-tokens", "admit_batch_request", (10**6, [(5, 0, 0)], 10, 10)),
        ("kv-cost-not-a-step-model", "kv_cost_per_token_s", ("h100",)),
        ("guard-target-nan", "tpot_guard", (sm, math.nan, [10], [10], 100)),
        ("guard-empty-interactive", "tpot_guard", (sm, 0.02, [], [10], 100)),
        ("guard-negative-batch-context", "tpot_guard", (sm, 0.02, [10], [10, -3], 100)),
        ("guard-batch-not-a-list", "tpot_guard", (sm, 0.02, [10], 8192, 100)),
        ("guard-negative-free", "tpot_guard", (sm, 0.02, [10], [10], -1)),
        ("guard-free-below-interactive", "tpot_guard", (sm, 0.02, [10] * 8, [10], 7)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
