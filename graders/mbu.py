"""Hidden cases for mbu.

1. ``step_bytes_per_gpu`` on tabled and made-up dense models (GQA with 8 and 4 KV heads, MHA, MQA,
   tied head, MLA with and without a query LoRA, MLA with v_head_dim != qk_nope_head_dim and
   head_dim holding the RoPE width as Hugging Face sets it) at every TP degree they allow, KV heads split
   (TP < K), exactly one per rank (TP == K) and replicated (TP > K: a total/TP count gives half a
   head), every dtype (INT4 is 0.5 bytes, FP32 4).
2. ``mbu`` on logs drawn from the grading's salt (idle ticks, mixed and pure prefill steps,
   stalled steps, extra row keys), on the four GPUs and a made-up one; plus fixed logs that hit
   the statement's rules exactly: one prompt token excludes a step, a pure prefill step, an
   all-decode log, an all-batch-1 log.
3. ``dashboard_numbers`` on salted logs: each of the eight numbers.
4. ``diagnose_dashboard``: for three salted setups at TP >= 2, each of the eight labels once, the
   reported number within 1e-7 of it, cases named "diagnose #i" in a salt-shuffled order. Every
   setup's log is redrawn until its eight numbers differ pairwise by more than 1e-3 relative.
   Two fixed logs check that the match is relative: numbers above 11 (tp 32) and numbers near
   2e-6 (a draft-sized model), reported 0.95e-7 high.
Every log tiles its window (each row starts where the previous one ends), as the statement says.
Then the statement's ValueErrors as input checks.
"""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
LABELS = ("correct", "weights_only", "achievable_denominator", "node_bytes_gpu_peak",
          "gpu_bytes_node_peak", "mean_of_ratios", "idle_in_denominator", "kv_once_per_batch")
MBU_KEYS = ("mbu", "busy_s", "bytes_per_gpu", "steps_used", "steps_excluded")

GQA4 = ModelConfig(name="made-up-gqa4", n_layers=40, hidden_size=5120, n_heads=32, n_kv_heads=4,
                   head_dim=128, ffn_size=13824, vocab_size=100352)
MHA = ModelConfig(name="made-up-mha-7b", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32,
                  head_dim=128, ffn_size=11008, vocab_size=32000)
MQA = ModelConfig(name="made-up-mqa", n_layers=26, hidden_size=2304, n_heads=16, n_kv_heads=1,
                  head_dim=256, ffn_size=9216, vocab_size=256000, tied_embeddings=True)
TIED = ModelConfig(name="made-up-tied-1b", n_layers=16, hidden_size=2048, n_heads=32, n_kv_heads=8,
                   head_dim=64, ffn_size=8192, vocab_size=128256, tied_embeddings=True)
MLA = ModelConfig(name="made-up-mla-dense", n_layers=30, hidden_size=3072, n_heads=24, n_kv_heads=24,
                  head_dim=192, ffn_size=8192, vocab_size=102400, q_lora_rank=768,
                  kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
MLA_RQ0 = ModelConfig(name="made-up-mla-rq0", n_layers=27, hidden_size=2048, n_heads=16, n_kv_heads=16,
                      head_dim=192, ffn_size=10944, vocab_size=102400, q_lora_rank=0,
                      kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
# MLA with v != n and head_dim holding the RoPE width, as Hugging Face's DeepseekV3Config sets it:
# a value width taken from qk_nope_head_dim or a query width taken from head_dim is off.
MLA_V = ModelConfig(name="made-up-mla-v160", n_layers=24, hidden_size=2560, n_heads=20, n_kv_heads=20,
                    head_dim=224, ffn_size=9728, vocab_size=102400, q_lora_rank=1024,
                    kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=96, v_head_dim=160)
MLA_V_RQ0 = dataclasses.replace(MLA_V, name="made-up-mla-v160-rq0", q_lora_rank=0)
# A draft-sized model: a few MB per step against 2-9 s steps gives MBUs near 2e-6.
TINY = ModelConfig(name="made-up-draft-tiny", n_layers=4, hidden_size=256, n_heads=4, n_kv_heads=4,
                   head_dim=64, ffn_size=1024, vocab_size=32000)
L8, L70 = specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B
TPS = {L8: (1, 2, 4, 8, 16), L70: (1, 2, 4, 8, 16), GQA4: (1, 2, 4, 8, 16), MHA: (1, 2, 4, 8),
       MQA: (1, 2, 4, 8, 16), TIED: (1, 2, 8, 16, 32), MLA: (1, 2, 4, 8), MLA_RQ0: (1, 2, 4, 8, 16),
       MLA_V: (1, 4, 20), MLA_V_RQ0: (1, 2, 10)}
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up-gpu", hbm_bytes_per_s=1.234e12)
GPUS = (specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB, ODD_GPU)
B, H, F8, I8, I4, F32 = DType.BF16, DType.FP16, DType.FP8, DType.INT8, DType.INT4, DType.FP32
DTYPES = ((B, B), (F8, F8), (I4, F8), (B, I4), (I8, B), (F32, F32), (H, F8), (I4, I4))


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def _row(i, t, d, ctx, pre, **extra) -> dict:
    return {"step": i, "t_start_s": t, "duration_s": d, "context_lens": ctx,
            "num_prefill_tokens": pre, **extra}


def _tile(rows: list[dict]) -> list[dict]:
    """The same rows with t_start_s rewritten so that each row starts where the previous ends."""
    out, t = [], 0.0
    for r in rows:
        out.append(dict(r, t_start_s=t))
        t += r["duration_s"]
    return out


def make_log(rnd: random.Random, ref, model, gpu, tp, wd, kd, *, rows: int, idle: float,
             prefill: float, stall: float, max_ctx: int, batches) -> list[dict]:
    """A server's step log: decode steps timed as bytes / (peak x eff) + overhead (some stalled),
    idle ticks, mixed and pure prefill steps; row 0 is always a decode step."""
    eff, overhead = rnd.uniform(0.55, 0.92), rnd.uniform(0.2e-3, 2e-3)
    flops = gpu.bf16_dense_flops
    log, t = [], 0.0
    for i in range(rows):
        if i > 0 and rnd.random() < idle:
            log.append(_row(i, t, rnd.uniform(0.5e-3, 8e-3), [], 0))
        else:
            ctx = [rnd.randint(1, max_ctx) for _ in range(rnd.choice(batches))]
            pre = 0
            if i > 0 and rnd.random() < prefill:
                pre = rnd.choice((1, 7, 512, 2048, 8192))
                if rnd.random() < 0.3:
                    ctx = []
            x = ref.step_bytes_per_gpu(model, tp, ctx or [1], wd, kd)
            d = (x["weight_bytes"] + x["kv_bytes"]) / (gpu.hbm_bytes_per_s * eff) + overhead
            d += pre * 2 * ref.decode_weight_params(model) / tp / (0.5 * flops)
            if rnd.random() < stall:
                d *= rnd.uniform(2.0, 6.0)
            extra = {"request_ids": list(range(len(ctx)))} if rnd.random() < 0.1 else {}
            log.append(_row(i, t, d, ctx, pre, **extra))
        t += log[-1]["duration_s"]
    return log


def _check_dict(out, want: dict, keys, ints=()) -> None:
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {sorted(keys)}")
    for k in keys:
        if k in ints:
            expect_equal(out[k], want[k], name=f"[{k!r}]")
        else:
            expect_close(out[k], want[k], name=f"[{k!r}]", rtol=RTOL)


def _distinct(nums: dict) -> bool:
    v = sorted(nums.values())
    return all(b - a > 1e-3 * b for a, b in zip(v, v[1:]))


def grade(g: Grading) -> None:
    ref = g.reference()
    fixed = random.Random(20240613)                # the same hidden lengths every grading
    # 1. bytes per GPU per step
    i = 0
    for m, tps in TPS.items():
        for tp in tps:
            wd, kd = DTYPES[i % len(DTYPES)]
            i += 1
            lens = [fixed.randint(1, 40000) for _ in range(fixed.choice((1, 3, 16, 64)))]
            with g.case(f"bytes-{_slug(m.name)}-tp{tp}-{wd.value}-{kd.value}-b{len(lens)}"):
                _check_dict(g.call("step_bytes_per_gpu", m, tp, lens, wd, kd),
                            ref.step_bytes_per_gpu(m, tp, lens, wd, kd), ("weight_bytes", "kv_bytes"))
    # The edges of the allowed models: one of everything (head_dim 1; TP 1), and MLA of ranks 1
    # whose head_dim (7) is not its q.k width (3), at TP 1 and 2.
    one = ModelConfig(name="one-of-each", n_layers=1, hidden_size=1, n_heads=1, n_kv_heads=1, head_dim=1,
                      ffn_size=1, vocab_size=1)
    mla1 = ModelConfig(name="mla-rank-1", n_layers=3, hidden_size=64, n_heads=4, n_kv_heads=4, head_dim=7,
                       ffn_size=128, vocab_size=100, q_lora_rank=1, kv_lora_rank=1, qk_nope_head_dim=2,
                       qk_rope_head_dim=1, v_head_dim=3)
    for m, tp in ((one, 1), (mla1, 1), (mla1, 2)):
        with g.case(f"bytes-{m.name}-tp{tp}"):
            _check_dict(g.call("step_bytes_per_gpu", m, tp, [3, 1], B, B),
                        ref.step_bytes_per_gpu(m, tp, [3, 1], B, B), ("weight_bytes", "kv_bytes"))
    # Weight bytes that do not split into whole bytes per rank (51 params x 2 bytes / TP 4 = 25.5).
    odd = ModelConfig(name="odd-params", n_layers=1, hidden_size=3, n_heads=4, n_kv_heads=2, head_dim=1,
                      ffn_size=1, vocab_size=2)
    with g.case("bytes-odd-params-tp4"):
        _check_dict(g.call("step_bytes_per_gpu", odd, 4, [3, 1], B, B),
                    ref.step_bytes_per_gpu(odd, 4, [3, 1], B, B), ("weight_bytes", "kv_bytes"))
    with g.case("bytes-tuple-of-lengths"):
        _check_dict(g.call("step_bytes_per_gpu", GQA4, 8, (5, 17, 1), B, B),
                    ref.step_bytes_per_gpu(GQA4, 8, (5, 17, 1), B, B), ("weight_bytes", "kv_bytes"))

    # 2. MBU over salted logs
    rnd = random.Random(f"mbu:{g.salt}")
    setups = [(L70, specs.H100_SXM, 8, B, B), (L70, specs.H200_SXM, 16, F8, F8), (L8, specs.B200, 1, B, B),
              (L8, specs.A100_SXM_80GB, 2, B, F8), (GQA4, ODD_GPU, 8, I4, B), (MHA, specs.H100_SXM, 4, I8, I8),
              (MQA, specs.B200, 8, B, B), (MLA, specs.H200_SXM, 8, F8, B), (MLA_RQ0, ODD_GPU, 2, B, I4),
              (TIED, specs.A100_SXM_80GB, 32, F32, F32), (MLA_V, specs.B200, 4, B, B),
              (MLA_V_RQ0, specs.H100_SXM, 2, F8, F8)]
    for j, (m, gpu, tp, wd, kd) in enumerate(setups):
        log = make_log(rnd, ref, m, gpu, tp, wd, kd, rows=rnd.randint(20, 60), idle=0.25, prefill=0.1,
                       stall=0.1, max_ctx=rnd.choice((2048, 32768, 131072)), batches=(1, 2, 5, 16, 48))
        with g.case(f"mbu-log-{j}-{_slug(m.name)}-{_slug(gpu.name)}-tp{tp}"):
            _check_dict(g.call("mbu", log, m, gpu, tp, wd, kd), ref.mbu(log, m, gpu, tp, wd, kd),
                        MBU_KEYS, ints=("steps_used", "steps_excluded"))
    # Fixed logs on the statement's exact rules.
    m, gpu, tp = L70, specs.H100_SXM, 8
    base = [_row(0, 0.0, 0.0081, [4000, 300, 12000], 0), _row(1, 0.0081, 0.0064, [1], 0)]
    logs = {
        "one-prompt-token-excludes": base + [_row(2, 0.0145, 0.0301, [50000] * 12, 1)],
        "pure-prefill-step-excluded": base + [_row(2, 0.0145, 0.0413, [], 8192)],
        "all-decode": base + [_row(2, 0.0145, 0.0099, [7, 70000, 700], 0)],
        "all-batch-1": [_row(k, 0.009 * k, 0.009 + 1e-4 * k, [1000 * (k + 1) ** 2], 0) for k in range(6)],
        "idle-ticks-only-around": [_row(0, 0.0, 0.002, [], 0)] + [dict(r, step=r["step"] + 1) for r in base]
        + [_row(3, 0.02, 0.003, [], 0)],
    }
    for name, log in logs.items():
        log = _tile(log)
        with g.case(f"mbu-{name}"):
            _check_dict(g.call("mbu", log, m, gpu, tp, B, B), ref.mbu(log, m, gpu, tp, B, B),
                        MBU_KEYS, ints=("steps_used", "steps_excluded"))

    # A made-up GPU at the smallest round peak the rules allow (any finite number > 0).
    with g.case("mbu-gpu-of-one-byte-per-second"):
        slow = dataclasses.replace(specs.H100_SXM, name="made-up-one-byte-per-second", hbm_bytes_per_s=1.0)
        log = _tile(base)
        _check_dict(g.call("mbu", log, m, slow, tp, B, B), ref.mbu(log, m, slow, tp, B, B),
                    MBU_KEYS, ints=("steps_used", "steps_excluded"))

    # 3. the dashboard numbers
    for j, (m, gpu, tp, wd, kd) in enumerate(setups[:6] + setups[7:9] + setups[10:]):
        f = round(rnd.uniform(0.6, 0.95), 4)
        log = make_log(rnd, ref, m, gpu, tp, wd, kd, rows=rnd.randint(20, 50), idle=0.2, prefill=0.1,
                       stall=0.15, max_ctx=32768, batches=(1, 3, 8, 32))
        with g.case(f"numbers-{j}-{_slug(m.name)}-tp{tp}"):
            _check_dict(g.call("dashboard_numbers", log, m, gpu, tp, wd, kd, f),
                        ref.dashboard_numbers(log, m, gpu, tp, wd, kd, f), LABELS)

    # 4. the diagnosis: each label once per setup, in a salted order
    diag = []
    for m, gpu, tp, wd, kd in rnd.sample([s for s in setups if s[2] >= 2], 3):
        for _ in range(100):
            f = round(rnd.uniform(0.6, 0.95), 4)
            log = make_log(rnd, ref, m, gpu, tp, wd, kd, rows=rnd.randint(15, 40), idle=0.25,
                           prefill=0.1, stall=0.2, max_ctx=65536, batches=(1, 4, 12, 40))
            nums = ref.dashboard_numbers(log, m, gpu, tp, wd, kd, f)
            if _distinct(nums):
                break
        else:
            raise RuntimeError("no log with eight distinct dashboard numbers")
        for label in LABELS:
            reported = nums[label] * (1 + rnd.uniform(-1e-7, 1e-7))
            diag.append((label, (log, m, gpu, tp, wd, kd, f, reported)))
    rnd.shuffle(diag)
    for k, (label, args) in enumerate(diag):
        with g.case(f"diagnose #{k + 1:02d}"):
            got = g.call("diagnose_dashboard", *args)
            if not isinstance(got, str) or got not in LABELS:
                fail(f"expected one of the eight labels, got {got!r}"[:200])
            if got != label:
                fail(f"{got!r} is not the mistake that produced this reported number")

    # The match is relative: a number above 11 reported 0.95e-7 high is more than 1e-6 off in
    # absolute terms, and numbers near 2e-6 (a draft model stalled for seconds a step) are
    # mostly within 1e-6 of one another.
    for name, m, gpu, tp, dt, f, label, by_eff, rows in (
            ("large-number", TIED, specs.A100_SXM_80GB, 32, F32, 0.83, "node_bytes_gpu_peak", True,
             [([3000, 200, 9000], 0, 0.62), ([], 0, 0.004), ([12000] * 6, 0, 0.55), ([500], 2048, 0.0203),
              ([70, 80000], 0, 0.41), ([1] * 3, 0, 0.7)]),
            ("small-numbers", TINY, specs.H100_SXM, 2, B, 0.71, "correct", False,
             [([300, 1200], 0, 2.1), ([], 0, 5.0), ([4000] * 3, 0, 3.3), ([], 64, 9.0), ([50], 0, 2.7),
              ([2500, 2500, 100, 9000], 0, 4.1)])):
        log = []
        for k, (ctx, pre, x) in enumerate(rows):      # x: seconds, or a busy step's efficiency
            if by_eff and ctx and not pre:
                b = ref.step_bytes_per_gpu(m, tp, ctx, dt, dt)
                x = (b["weight_bytes"] + b["kv_bytes"]) / (gpu.hbm_bytes_per_s * x)
            log.append(_row(k, 0.0, x, ctx, pre))
        log = _tile(log)
        nums = ref.dashboard_numbers(log, m, gpu, tp, dt, dt, f)
        if not _distinct(nums):
            raise RuntimeError(f"diagnose-{name}: two dashboard numbers within 1e-3")
        with g.case(f"diagnose-{name}"):
            got = g.call("diagnose_dashboard", log, m, gpu, tp, dt, dt, f, nums[label] * (1 + 0.95e-7))
            if not isinstance(got, str) or got not in LABELS:
                fail(f"expected one of the eight labels, got {got!r}"[:200])
            if got != label:
                fail(f"{got!r} is not the mistake that produced this reported number")

    # Input checks, after every core case.
    ok_log = base
    gpu = specs.H100_SXM
    checks = [
        ("bytes-moe", "step_bytes_per_gpu", (specs.MIXTRAL_8X7B, 2, [10], B, B)),
        ("bytes-moe-one-routed-expert", "step_bytes_per_gpu",
         (dataclasses.replace(L8, n_routed_experts=1, experts_per_token=1, moe_ffn_size=14336), 1, [10], B, B)),
        ("bytes-zero-kv-heads", "step_bytes_per_gpu", (dataclasses.replace(L8, n_kv_heads=0), 1, [10], B, B)),
        ("bytes-zero-head-dim", "step_bytes_per_gpu", (dataclasses.replace(L8, head_dim=0), 1, [10], B, B)),
        ("bytes-model-dict", "step_bytes_per_gpu", ({"n_layers": 32}, 1, [10], B, B)),
        ("bytes-zero-n_layers", "step_bytes_per_gpu", (dataclasses.replace(L8, n_layers=0), 1, [10], B, B)),
        ("bytes-zero-hidden_size", "step_bytes_per_gpu", (dataclasses.replace(L8, hidden_size=0), 1, [10], B, B)),
        ("bytes-zero-n_heads", "step_bytes_per_gpu", (dataclasses.replace(L8, n_heads=0), 1, [10], B, B)),
        ("bytes-zero-vocab_size", "step_bytes_per_gpu", (dataclasses.replace(L8, vocab_size=0), 1, [10], B, B)),
        ("bytes-zero-ffn_size", "step_bytes_per_gpu", (dataclasses.replace(L8, ffn_size=0), 1, [10], B, B)),
        ("bytes-tp-zero", "step_bytes_per_gpu", (L8, 0, [10], B, B)),
        ("bytes-tp-bool", "step_bytes_per_gpu", (L8, True, [10], B, B)),
        ("bytes-tp-float", "step_bytes_per_gpu", (L8, 2.0, [10], B, B)),
        ("bytes-tp-3-with-8-kv-heads", "step_bytes_per_gpu", (dataclasses.replace(L8, n_heads=48), 3, [10], B, B)),
        ("bytes-tp-12-with-8-kv-heads", "step_bytes_per_gpu", (dataclasses.replace(L8, n_heads=48), 12, [10], B, B)),
        ("bytes-heads-not-divisible-by-tp", "step_bytes_per_gpu", (MLA, 16, [10], B, B)),
        ("bytes-heads-not-multiple-of-kv", "step_bytes_per_gpu", (dataclasses.replace(L8, n_kv_heads=7), 1, [10], B, B)),
        ("bytes-empty-batch", "step_bytes_per_gpu", (L8, 1, [], B, B)),
        ("bytes-zero-length", "step_bytes_per_gpu", (L8, 1, [10, 0], B, B)),
        ("bytes-scalar-lengths", "step_bytes_per_gpu", (L8, 1, 4096, B, B)),
        ("bytes-dtype-string", "step_bytes_per_gpu", (L8, 1, [10], "bf16", B)),
        ("mbu-empty-log", "mbu", ([], L8, gpu, 1, B, B)),
        ("mbu-no-busy-decode-step", "mbu", ([_row(0, 0.0, 0.01, [], 0), _row(1, 0.01, 0.02, [5], 100)], L8, gpu, 1, B, B)),
        ("mbu-log-not-a-list", "mbu", (len(ok_log), L8, gpu, 1, B, B)),
        ("mbu-duration-string", "mbu", (ok_log + [_row(2, 0.0145, "0.01", [5], 0)], L8, gpu, 1, B, B)),
        ("mbu-zero-duration", "mbu", (ok_log + [_row(2, 0.0145, 0.0, [5], 0)], L8, gpu, 1, B, B)),
        ("mbu-negative-duration", "mbu", (ok_log + [_row(2, 0.0145, -0.01, [5], 0)], L8, gpu, 1, B, B)),
        ("mbu-nan-duration", "mbu", (ok_log + [_row(2, 0.0145, math.nan, [5], 0)], L8, gpu, 1, B, B)),
        ("mbu-negative-prefill", "mbu", (ok_log + [_row(2, 0.0145, 0.01, [5], -1)], L8, gpu, 1, B, B)),
        ("mbu-zero-context-in-row", "mbu", (ok_log + [_row(2, 0.0145, 0.01, [5, 0], 0)], L8, gpu, 1, B, B)),
        ("mbu-row-missing-key", "mbu", (ok_log + [{"step": 2, "duration_s": 0.01, "context_lens": [5]}],
                                        L8, gpu, 1, B, B)),
        ("mbu-row-missing-step", "mbu", (ok_log + [{k: v for k, v in _row(2, 0.0145, 0.01, [5], 0).items()
                                                    if k != "step"}], L8, gpu, 1, B, B)),
        ("mbu-row-missing-t-start", "mbu", (ok_log + [{k: v for k, v in _row(2, 0.0145, 0.01, [5], 0).items()
                                                       if k != "t_start_s"}], L8, gpu, 1, B, B)),
        ("mbu-gpu-not-a-gpu", "mbu", (ok_log, L8, "H100 SXM", 1, B, B)),
        ("mbu-zero-bandwidth", "mbu", (ok_log, L8, dataclasses.replace(gpu, hbm_bytes_per_s=0.0), 1, B, B)),
        ("numbers-fraction-one", "dashboard_numbers", (ok_log, L70, gpu, 8, B, B, 1.0)),
        ("numbers-fraction-zero", "dashboard_numbers", (ok_log, L70, gpu, 8, B, B, 0.0)),
        ("numbers-fraction-nan", "dashboard_numbers", (ok_log, L70, gpu, 8, B, B, math.nan)),
        ("numbers-fraction-percent", "dashboard_numbers", (ok_log, L70, gpu, 8, B, B, 80.0)),
    ]
    nums = ref.dashboard_numbers(ok_log, L70, gpu, 8, B, B, 0.8)
    checks += [
        ("diagnose-matches-nothing", "diagnose_dashboard",
         (ok_log, L70, gpu, 8, B, B, 0.8, nums["correct"] * 1.01)),
        ("diagnose-tp1-ambiguous", "diagnose_dashboard",
         (ok_log, L8, gpu, 1, B, B, 0.8, ref.mbu(ok_log, L8, gpu, 1, B, B)["mbu"])),
        ("diagnose-reported-nan", "diagnose_dashboard", (ok_log, L70, gpu, 8, B, B, 0.8, math.nan)),
        ("diagnose-reported-zero", "diagnose_dashboard", (ok_log, L70, gpu, 8, B, B, 0.8, 0.0)),
        ("diagnose-reported-string", "diagnose_dashboard", (ok_log, L70, gpu, 8, B, B, 0.8, str(nums["correct"]))),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
