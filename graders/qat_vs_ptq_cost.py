"""Hidden cases for qat-vs-ptq-cost: QAT GPU-hours on dense, MQA, MoE (top-1 too), MLA, tied and
made-up models (ranges at their boundaries), a single token and mfu = 1, four GPUs and a made-up
one, BF16/FP8 math, with and without a teacher and fake-quant overhead; fleet savings across fleet
sizes and format pairs (the same format, a slower format); break-even days including infinity;
each skip rule alone, at its exact threshold (binary-exact inputs), and in salted random
combinations; then the input checks."""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
BF16, FP8 = DType.BF16, DType.FP8
HOURS_KEYS = ("active_params", "flops_per_token", "total_flops", "gpu_hours")
FLEET_KEYS = ("speedup", "gpus_needed", "gpus_saved")
RULES = ("compute_bound_weight_only", "fleet_too_small", "no_kernel_for_format",
         "no_training_access", "ptq_meets_bar", "refresh_before_break_even")

TIED = ModelConfig(name="tied-1b", n_layers=16, hidden_size=2048, n_heads=32, n_kv_heads=8,
                   head_dim=64, ffn_size=8192, vocab_size=128256, tied_embeddings=True)
MOE_SMALL = ModelConfig(name="moe-small", n_layers=24, hidden_size=2048, n_heads=16, n_kv_heads=4,
                        head_dim=128, ffn_size=8192, vocab_size=151936, n_routed_experts=64,
                        n_shared_experts=2, experts_per_token=6, moe_ffn_size=1408,
                        first_dense_layers=2)
MLA_RQ0 = ModelConfig(name="mla-rq0", n_layers=27, hidden_size=2048, n_heads=16, n_kv_heads=16,
                      head_dim=192, ffn_size=10944, vocab_size=102400, q_lora_rank=0,
                      kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
# MLA with qk_nope_head_dim != v_head_dim (every other MLA model here has nope == v, which hides a
# value width read from qk_nope_head_dim); head_dim stays nope + rope, as specs documents.
MLA_V160 = dataclasses.replace(MLA_RQ0, name="mla-rope96-v160", head_dim=224, qk_rope_head_dim=96,
                               v_head_dim=160)
# one KV head (multi-query attention) and one routed expert per token (Switch-style top-1)
MQA = dataclasses.replace(specs.LLAMA_3_1_8B, name="mqa-8b", n_kv_heads=1)
MOE_TOP1 = dataclasses.replace(MOE_SMALL, name="moe-top1", experts_per_token=1, n_shared_experts=0)
# the boundaries of the model's ranges: every count at its minimum of 1; an MoE whose tokens use
# every expert (k = E); an MoE config whose layers are all dense; MLA with both ranks 1
TOY_ONES = ModelConfig(name="toy-ones", n_layers=1, hidden_size=64, n_heads=1, n_kv_heads=1, head_dim=1,
                       ffn_size=128, vocab_size=1)
MOE_ALL = dataclasses.replace(MOE_SMALL, name="moe-k-equals-e", n_routed_experts=4, experts_per_token=4)
MOE_ALL_DENSE = dataclasses.replace(MOE_SMALL, name="moe-all-dense", first_dense_layers=24)
MLA_RANK1 = dataclasses.replace(MLA_V160, name="mla-ranks-1", q_lora_rank=1, kv_lora_rank=1)
MODELS = [specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B, specs.MIXTRAL_8X7B, specs.DEEPSEEK_V3,
          specs.KIMI_K2, TIED, MOE_SMALL, MLA_RQ0, MLA_V160, MQA, MOE_TOP1, TOY_ONES, MOE_ALL,
          MOE_ALL_DENSE, MLA_RANK1]
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", bf16_dense_flops=1.7e15,
                              fp8_dense_flops=3.3e15)
NO_FP8_GPU = dataclasses.replace(specs.A100_SXM_80GB, name="made-up-no-fp8", bf16_dense_flops=400e12)
GPUS = [specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB, ODD_GPU]
THR = {"bf16": 600.0, "fp8": 1000.0, "int8_weight_only": 900.0, "int4_weight_only": 1400.0,
       "fp4": 2000.0, "int4_awq_slow": 800.0}


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def _check_dict(out, exp, keys, fleet=None) -> None:
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {list(keys)}")
    for k in keys:
        if k == "active_params":
            expect_equal(out[k], exp[k], name="['active_params']")
        elif k == "gpus_saved":
            expect_close(out[k], exp[k], name="['gpus_saved']", rtol=RTOL, atol=1e-9 * fleet)
        else:
            expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def _check_rules(out, exp) -> None:
    if not isinstance(out, list) or not all(isinstance(r, str) for r in out):
        fail("expected a list of rule names (str)")
    bad = [r for r in out if r not in RULES]
    if bad:
        fail(f"unknown rule name(s) {bad}; the statement lists {list(RULES)}")
    if out != sorted(set(out)):
        fail("the rule names must be sorted alphabetically, without repeats")
    missing, extra = sorted(set(exp) - set(out)), sorted(set(out) - set(exp))
    if missing or extra:
        fail(f"rules missing: {missing}; rules that do not hold: {extra}")


def _base(**kw) -> dict:
    c = {"training_access": True, "format": "int4_weight_only", "gpu": specs.H100_SXM,
         "fp4_dense_flops": None, "ptq_drop": 3.0, "max_drop": 1.0, "compute_bound_share": 0.25,
         "fleet_gpus": 64, "thr_ptq": 1000.0, "thr_qat": 1400.0, "qat_gpu_hours": 3902.5,
         "days_to_refresh": 90.0}
    c.update(kw)
    return c


def _random_case(rnd: random.Random, ref) -> dict:
    """A random case none of whose thresholds is within 1e-6 (relative) of a tie."""
    while True:
        gpu = rnd.choice([specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB, ODD_GPU])
        fmt = rnd.choice(["int4_weight_only", "int8_weight_only", "fp8", "fp4"])
        fp4 = 9e15 if gpu is specs.B200 else rnd.choice([None, None, 5e15])
        thr_ptq = rnd.uniform(200, 3000)
        c = _base(training_access=rnd.random() < 0.8, format=fmt, gpu=gpu, fp4_dense_flops=fp4,
                  ptq_drop=round(rnd.uniform(0, 4), 3), max_drop=round(rnd.uniform(0, 3), 3),
                  compute_bound_share=rnd.random(), fleet_gpus=rnd.choice([1, 2, 3, 8, 16, 64, 256, 2048]),
                  thr_ptq=thr_ptq, thr_qat=thr_ptq * rnd.uniform(0.8, 2.5),
                  qat_gpu_hours=10 ** rnd.uniform(0, 5), days_to_refresh=rnd.uniform(5, 400))
        saved = c["fleet_gpus"] - c["fleet_gpus"] * c["thr_ptq"] / c["thr_qat"]
        days = ref.break_even_days(c["qat_gpu_hours"], saved)
        near = (abs(c["ptq_drop"] - c["max_drop"]) <= 1e-6 * max(1.0, c["max_drop"])
                or abs(c["compute_bound_share"] - 0.5) <= 1e-6 or abs(saved - 1) <= 1e-6
                or (math.isfinite(days) and abs(days - c["days_to_refresh"]) <= 1e-6 * days))
        if not near:
            return c


def grade(g: Grading) -> None:
    ref = g.reference()
    rnd = random.Random(f"qat-vs-ptq-cost:{g.salt}")

    # 1. GPU-hours of the QAT run.
    configs = [(specs.H100_SXM, BF16, 0.4, True, 0.0, 1e10), (specs.H200_SXM, FP8, 0.35, False, 0.0, 3e9),
               (specs.B200, BF16, 0.5, True, 0.25, 5e8), (specs.A100_SXM_80GB, BF16, 0.45, False, 0.1, 2 * 10 ** 9),
               (ODD_GPU, FP8, 0.3, True, 0.05, 123_456_789)]
    for i, m in enumerate(MODELS):
        for j in range(3):
            gpu, cdt, mfu, teacher, ovh, tokens = configs[(i + j) % len(configs)]
            with g.case(f"hours-{_slug(m.name)}-{_slug(gpu.name)}-{cdt.value}-mfu{mfu}-"
                        f"{'teacher' if teacher else 'no-teacher'}-ovh{ovh}-tokens{tokens:g}"):
                _check_dict(g.call("qat_gpu_hours", m, tokens, gpu, cdt, mfu, teacher, ovh),
                            ref.qat_gpu_hours(m, tokens, gpu, cdt, mfu, teacher, ovh), HOURS_KEYS)
    with g.case("hours-default-overhead-is-zero"):
        _check_dict(g.call("qat_gpu_hours", specs.LLAMA_3_1_70B, 1e10, specs.H100_SXM, BF16, 0.4, True),
                    ref.qat_gpu_hours(specs.LLAMA_3_1_70B, 1e10, specs.H100_SXM, BF16, 0.4, True), HOURS_KEYS)
    with g.case("hours-one-token"):                      # tokens = 1 is a valid count
        args = (specs.LLAMA_3_1_8B, 1, specs.H100_SXM, BF16, 0.5, False, 0.0)
        _check_dict(g.call("qat_gpu_hours", *args), ref.qat_gpu_hours(*args), HOURS_KEYS)
    with g.case("hours-mfu-one"):                         # the top of (0, 1] is allowed
        args = (specs.LLAMA_3_1_8B, 1e9, specs.H100_SXM, BF16, 1.0, False, 0.0)
        _check_dict(g.call("qat_gpu_hours", *args), ref.qat_gpu_hours(*args), HOURS_KEYS)
    for k in range(6):                                   # salted extras
        m, gpu = rnd.choice(MODELS), rnd.choice(GPUS)
        cdt = BF16 if gpu is specs.A100_SXM_80GB else rnd.choice((BF16, FP8))
        args = (m, rnd.choice((1e8, 7.5e9, 2e10, 4 * 10 ** 9)), gpu, cdt, rnd.choice((0.3, 0.4, 0.55)),
                rnd.random() < 0.5, rnd.choice((0.0, 0.1, 0.3)))
        with g.case(f"hours-salted-{k}-{_slug(m.name)}-{_slug(gpu.name)}"):
            _check_dict(g.call("qat_gpu_hours", *args), ref.qat_gpu_hours(*args), HOURS_KEYS)

    # 2. Fleet savings.
    pairs = [("fp8", "int4_weight_only"), ("fp8", "fp8"), ("int4_weight_only", "int4_weight_only"),
             ("bf16", "fp8"), ("int8_weight_only", "int4_weight_only"), ("fp8", "fp4"),
             ("fp8", "int4_awq_slow"), ("bf16", "bf16")]
    for fleet in (1, 8, 64, 512, 3, 1000):
        for ptq, qat in pairs:
            with g.case(f"fleet-{fleet}-{ptq}-to-{qat}"):
                _check_dict(g.call("fleet_saving", fleet, ptq, qat, THR),
                            ref.fleet_saving(fleet, ptq, qat, THR), FLEET_KEYS, fleet=fleet)
    with g.case("fleet-no-bf16-entry"):
        thr = {"fp8": 1234.5, "int4_weight_only": 1851.75}
        _check_dict(g.call("fleet_saving", 40, "fp8", "int4_weight_only", thr),
                    ref.fleet_saving(40, "fp8", "int4_weight_only", thr), FLEET_KEYS, fleet=40)

    with g.case("fleet-throughputs-below-one-token-per-s"):
        thr = {"fp8": 0.5, "int4_weight_only": 0.75}
        _check_dict(g.call("fleet_saving", 12, "fp8", "int4_weight_only", thr),
                    ref.fleet_saving(12, "fp8", "int4_weight_only", thr), FLEET_KEYS, fleet=12)

    # 3. Break-even days.
    bes = [(3902.5736378950205, 18.285714285714285), (3902.5736378950205, 0.0), (3902.5, -17.5),
           (0.0, 3.0), (96.0, 1.0), (1e6, 1e-6), (1779.2, 800.0), (0.0, 0.0), (500, 2),
           (rnd.uniform(1, 1e5), rnd.uniform(0.1, 500))]
    for k, (h, s) in enumerate(bes):
        with g.case(f"break-even-{k}-hours{h:g}-saved{s:g}"):
            expect_close(g.call("break_even_days", h, s), ref.break_even_days(h, s),
                         name="break_even_days", rtol=RTOL)

    # 4. Skip rules: each alone, each at its threshold, combinations, salted random cases.
    H100, A100, B200 = specs.H100_SXM, specs.A100_SXM_80GB, specs.B200
    skip = [
        ("go-ahead", _base()),
        ("no-training-access", _base(training_access=False)),
        ("ptq-drop-equals-bar", _base(ptq_drop=0.75, max_drop=0.75)),
        ("ptq-drop-just-over-bar", _base(ptq_drop=0.75 + 2.0 ** -20, max_drop=0.75)),
        ("ptq-drop-under-bar", _base(ptq_drop=0.2, max_drop=1.0)),
        ("weight-only-share-half", _base(compute_bound_share=0.5)),
        ("weight-only-share-just-under-half", _base(compute_bound_share=0.5 - 2.0 ** -30)),
        ("weight-only-share-zero", _base(compute_bound_share=0.0)),
        ("fp4-tiny-made-up-peak", _base(format="fp4", fp4_dense_flops=0.5, thr_qat=2000.0)),
        ("slow-toy-serving-short-refresh", _base(thr_ptq=0.5, thr_qat=0.75, days_to_refresh=0.5)),
        ("int8-weight-only-prefill-heavy", _base(format="int8_weight_only", compute_bound_share=0.75,
                                                 thr_qat=1200.0)),
        ("fp8-prefill-heavy", _base(format="fp8", compute_bound_share=0.9, thr_qat=1250.0)),
        ("fp8-on-a100", _base(format="fp8", gpu=A100, thr_qat=1250.0)),
        ("fp8-on-made-up-gpu-without-fp8", _base(format="fp8", gpu=NO_FP8_GPU, thr_qat=1250.0)),
        ("int4-weight-only-on-a100", _base(gpu=A100)),
        ("fp4-on-h100", _base(format="fp4", thr_qat=2000.0)),
        ("fp4-on-h200", _base(format="fp4", gpu=specs.H200_SXM, thr_qat=2000.0)),
        ("fp4-on-b200", _base(format="fp4", gpu=B200, fp4_dense_flops=9e15, thr_qat=2000.0)),
        ("fp4-on-made-up-gpu", _base(format="fp4", gpu=ODD_GPU, fp4_dense_flops=6.6e15, thr_qat=2000.0)),
        ("fp4-on-b200-prefill-heavy", _base(format="fp4", gpu=B200, fp4_dense_flops=9e15, thr_qat=2000.0,
                                           compute_bound_share=1.0)),
        ("saved-exactly-one", _base(fleet_gpus=4, thr_ptq=3.0, thr_qat=4.0, qat_gpu_hours=10.0)),
        ("saved-just-under-one", _base(fleet_gpus=4, thr_ptq=3.0, thr_qat=3.9, qat_gpu_hours=10.0)),
        ("small-fleet-cheap-run", _base(fleet_gpus=2, qat_gpu_hours=10.0)),
        ("break-even-equals-refresh", _base(fleet_gpus=4, thr_ptq=3.0, thr_qat=4.0, qat_gpu_hours=96.0,
                                           days_to_refresh=4.0)),
        ("break-even-just-before-refresh", _base(fleet_gpus=4, thr_ptq=3.0, thr_qat=4.0, qat_gpu_hours=96.0,
                                                days_to_refresh=4.0 + 2.0 ** -20)),
        ("break-even-after-refresh", _base(days_to_refresh=7.0)),
        ("zero-cost-run", _base(qat_gpu_hours=0.0, fleet_gpus=8)),
        ("same-throughput", _base(thr_qat=1000.0)),
        ("qat-format-slower", _base(thr_qat=800.0, qat_gpu_hours=0.0)),
        ("everything-wrong", _base(training_access=False, format="fp4", ptq_drop=0.1, max_drop=0.5,
                                   fleet_gpus=1, thr_qat=1100.0, days_to_refresh=30.0)),
        ("weight-only-everything-wrong", _base(training_access=False, ptq_drop=0.0, max_drop=0.0,
                                              compute_bound_share=0.8, fleet_gpus=1, thr_qat=1000.0)),
    ]
    skip += [(f"salted-{k}", _random_case(rnd, ref)) for k in range(16)]
    order = list(range(len(skip)))
    rnd.shuffle(order)
    for i in order:
        name, case = skip[i]
        with g.case(f"skip-{name}"):
            _check_rules(g.call("skip_qat", case), ref.skip_qat(case))

    # Input checks last.
    m, gpu = specs.LLAMA_3_1_70B, specs.H100_SXM
    checks = [
        ("hours-model-not-a-config", "qat_gpu_hours", ("llama-3.1-70b", 1e10, gpu, BF16, 0.4, True)),
        ("hours-zero-layers", "qat_gpu_hours", (dataclasses.replace(m, n_layers=0), 1e10, gpu, BF16, 0.4, True)),
        ("hours-gpu-not-a-gpu", "qat_gpu_hours", (m, 1e10, "H100", BF16, 0.4, True)),
        ("hours-mfu-above-one", "qat_gpu_hours", (m, 1e10, gpu, BF16, 1.5, True)),
        ("hours-fp8-on-a100", "qat_gpu_hours", (m, 1e10, specs.A100_SXM_80GB, FP8, 0.4, True)),
        ("hours-fp32-math", "qat_gpu_hours", (m, 1e10, gpu, DType.FP32, 0.4, True)),
        ("hours-zero-tokens", "qat_gpu_hours", (m, 0, gpu, BF16, 0.4, True)),
        ("hours-nan-tokens", "qat_gpu_hours", (m, math.nan, gpu, BF16, 0.4, True)),
        ("hours-mfu-percent", "qat_gpu_hours", (m, 1e10, gpu, BF16, 40, True)),
        ("hours-mfu-zero", "qat_gpu_hours", (m, 1e10, gpu, BF16, 0.0, True)),
        ("hours-negative-overhead", "qat_gpu_hours", (m, 1e10, gpu, BF16, 0.4, True, -0.1)),
        ("hours-teacher-not-bool", "qat_gpu_hours", (m, 1e10, gpu, BF16, 0.4, "yes")),
        ("fleet-zero", "fleet_saving", (0, "fp8", "int4_weight_only", THR)),
        ("fleet-bool", "fleet_saving", (True, "fp8", "int4_weight_only", THR)),
        ("fleet-unknown-format", "fleet_saving", (64, "fp8", "nvfp4", THR)),
        ("fleet-zero-throughput", "fleet_saving", (64, "fp8", "int4_weight_only", {"fp8": 0.0, "int4_weight_only": 1.0})),
        ("fleet-nan-throughput", "fleet_saving", (64, "fp8", "int4_weight_only", {"fp8": math.nan, "int4_weight_only": 1.0})),
        ("break-even-negative-hours", "break_even_days", (-1.0, 3.0)),
        ("break-even-nan-saved", "break_even_days", (100.0, math.nan)),
        ("break-even-infinite-hours", "break_even_days", (math.inf, 3.0)),
        ("skip-missing-key", "skip_qat", ({k: v for k, v in _base().items() if k != "days_to_refresh"},)),
        ("skip-extra-key", "skip_qat", (_base(serving_format="int4_weight_only"),)),
        ("skip-training-access-int", "skip_qat", (_base(training_access=1),)),
        ("skip-gpu-not-a-gpu", "skip_qat", (_base(gpu="H100"),)),
        ("skip-unknown-format", "skip_qat", (_base(format="nvfp4"),)),
        ("skip-share-above-one", "skip_qat", (_base(compute_bound_share=1.5),)),
        ("skip-negative-drop", "skip_qat", (_base(ptq_drop=-0.1),)),
        ("skip-zero-fleet", "skip_qat", (_base(fleet_gpus=0),)),
        ("skip-zero-refresh", "skip_qat", (_base(days_to_refresh=0.0),)),
        ("skip-zero-fp4-peak", "skip_qat", (_base(fp4_dense_flops=0.0),)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
