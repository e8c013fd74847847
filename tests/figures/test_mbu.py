"""Every figure of the mbu statement and editorial, computed by the reference; the editorial's
bar chart of the eight dashboard numbers is regenerated here and must match."""

import random
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "mbu.py", "ref_mbu")
EDITORIAL = ROOT / "exercises" / "mbu" / "editorial.md"
B = DType.BF16
M70, H100 = specs.LLAMA_3_1_70B, specs.H100_SXM

EXAMPLE = [
    {"step": 0, "t_start_s": 0.0, "duration_s": 0.0075, "context_lens": [8192, 4096, 2048, 1024],
     "num_prefill_tokens": 0},
    {"step": 1, "t_start_s": 0.0075, "duration_s": 0.004, "context_lens": [], "num_prefill_tokens": 0},
    {"step": 2, "t_start_s": 0.0115, "duration_s": 0.021, "context_lens": [8192, 4096, 2048, 1024],
     "num_prefill_tokens": 4096},
    {"step": 3, "t_start_s": 0.0325, "duration_s": 0.0095, "context_lens": [16384] * 8,
     "num_prefill_tokens": 0},
]


def seeded_log(seed, model=M70, gpu=H100, tp=8, n_steps=400, eff=0.80, overhead_s=1.2e-3,
               idle_frac=0.25, prefill_frac=0.05):
    """The editorial's server log (the spec notes' generator): a decode step takes its per-GPU
    bytes / (0.8 x peak) + 1.2 ms; a quarter of the rows are idle ticks of 2-20 ms; 5% of the
    busy rows also prefill 2,048 or 8,192 tokens at half the BF16 peak."""
    rng = random.Random(seed)
    log, t = [], 0.0
    for i in range(n_steps):
        u = rng.random()
        if u < idle_frac:
            log.append(dict(step=i, t_start_s=t, duration_s=rng.uniform(2e-3, 20e-3), context_lens=[],
                            num_prefill_tokens=0))
        else:
            b = rng.choice([1, 4, 16, 32, 64])
            ctx = [rng.randint(512, 16384) for _ in range(b)]
            pre = rng.choice([2048, 8192]) if u > 1 - prefill_frac else 0
            x = ref.step_bytes_per_gpu(model, tp, ctx, B, B)
            d = (x["weight_bytes"] + x["kv_bytes"]) / (gpu.hbm_bytes_per_s * eff) + overhead_s
            if pre:
                d += pre * 2 * ref.decode_weight_params(model) / tp / gpu.bf16_dense_flops / 0.5
            log.append(dict(step=i, t_start_s=t, duration_s=d, context_lens=ctx, num_prefill_tokens=pre))
        t += log[-1]["duration_s"]
    return log


def stall_log():
    """Seed 11 without idle or prefill rows; 10% of the steps stalled x5 (a host-side pause)."""
    log = seeded_log(11, idle_frac=0.0, prefill_frac=0.0)
    rng = random.Random(3)
    for s in log:
        if rng.random() < 0.10:
            s["duration_s"] *= 5
    return log


def pct(x, nd=1):
    return round(100 * x, nd)


ORDER = ("correct", "weights_only", "kv_once_per_batch", "mean_of_ratios", "idle_in_denominator",
         "achievable_denominator", "gpu_bytes_node_peak", "node_bytes_gpu_peak")


def mbu_svg() -> str:
    """Horizontal bars: what each dashboard shows on the seed-7 log; the right value as a line."""
    nums = ref.dashboard_numbers(seeded_log(7), M70, H100, 8, B, B, 0.8)
    W, L, R, T, rowh = 560, 170, 80, 16, 24
    H = T + rowh * len(ORDER) + 34
    cap = 1.2                                          # bars longer than 120% are cut
    def px(v):
        return L + min(v, cap) / cap * (W - L - R)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">']
    for k, label in enumerate(ORDER):
        y = T + k * rowh
        v = nums[label]
        color = "#2ca02c" if label == "correct" else "#d62728" if v > nums["correct"] else "#1f77b4"
        out.append(f'<text x="{L - 6}" y="{y + 14}" text-anchor="end">{label}</text>')
        out.append(f'<rect x="{L}" y="{y + 3}" width="{px(v) - L:.1f}" height="{rowh - 8}" fill="{color}"/>')
        text = f"{pct(v)}%" + (" (cut)" if v > cap else "")
        out.append(f'<text x="{px(v) + 4:.1f}" y="{y + 14}">{text}</text>')
    base = T + rowh * len(ORDER)
    for tick in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2):
        out.append(f'<text x="{px(tick):.1f}" y="{base + 14}" text-anchor="middle">{round(100 * tick)}%</text>')
    x = px(nums["correct"])
    out.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{base}" stroke="#2ca02c" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{base + 30}" text-anchor="middle">'
               'MBU a dashboard reports (Llama 3.1 70B, 8x H100, TP 8)</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == mbu_svg(), "regenerate the SVG: python tests/figures/test_mbu.py"


def test_statement_example():
    b = ref.step_bytes_per_gpu(M70, 8, [8192, 4096, 2048, 1024], B, B)
    assert b["weight_bytes"] == 17_375_428_608 and b["kv_bytes"] == 15_360 * 40_960
    assert round(8 * b["weight_bytes"] / 1e9, 1) == 139.0
    assert ref.kv_bytes_per_token_per_gpu(M70, 8, B) == 40_960
    assert b["weight_bytes"] + b["kv_bytes"] == 18_004_574_208
    assert sum(ref.step_bytes_per_gpu(M70, 8, [16384] * 8, B, B).values()) == 22_744_137_728
    r = ref.mbu(EXAMPLE, M70, H100, 8, B, B)
    assert r["bytes_per_gpu"] == 40_748_711_936 and r["busy_s"] == pytest.approx(0.017, rel=1e-15)
    assert (r["steps_used"], r["steps_excluded"]) == (2, 2)
    assert round(r["mbu"], 4) == 0.7155 and r["mbu"] == pytest.approx(0.7155173298683054, rel=1e-12)
    n = ref.dashboard_numbers(EXAMPLE, M70, H100, 8, B, B, 0.8)
    assert round(n["weights_only"], 4) == 0.6102 and round(n["idle_in_denominator"], 4) == 0.2896
    assert round(sum(row["duration_s"] for row in EXAMPLE), 6) == 0.042
    assert ref.diagnose_dashboard(EXAMPLE, M70, H100, 8, B, B, 0.8, 0.2896141573276475) == "idle_in_denominator"
    with pytest.raises(ValueError):                # TP 1: the node mistakes equal the right number
        ref.diagnose_dashboard(EXAMPLE, specs.LLAMA_3_1_8B, H100, 1, B, B, 0.8,
                               ref.mbu(EXAMPLE, specs.LLAMA_3_1_8B, H100, 1, B, B)["mbu"])


def test_kv_replication():
    assert ref.kv_bytes_per_token_per_gpu(M70, 1, B) == 327_680
    assert ref.kv_bytes_per_token_per_gpu(M70, 16, B) == 40_960      # not 327,680 / 16 = 20,480
    assert 327_680 / 16 == 20_480


def test_question_numbers_seeded_log():
    log = seeded_log(7)
    n = ref.dashboard_numbers(log, M70, H100, 8, B, B, 0.8)
    got = {k: pct(v) for k, v in n.items()}
    assert round(100 * n["achievable_denominator"]) == 89
    assert got == {"correct": 71.0, "weights_only": 48.7, "achievable_denominator": 88.7,
                   "node_bytes_gpu_peak": 567.9, "gpu_bytes_node_peak": 8.9, "mean_of_ratios": 70.4,
                   "idle_in_denominator": 29.6, "kv_once_per_batch": 50.3}
    delta = {k: round(100 * (v - n["correct"]), 1) for k, v in n.items()}
    assert (delta["weights_only"], delta["achievable_denominator"], delta["mean_of_ratios"],
            delta["idle_in_denominator"], delta["kv_once_per_batch"]) == (-22.3, 17.7, -0.6, -41.4, -20.7)
    r = ref.mbu(log, M70, H100, 8, B, B)
    assert (r["steps_used"], r["steps_excluded"]) == (279, 121)


def test_question_numbers_one_step_and_stalls():
    ctx = [8192] * 64
    b = ref.step_bytes_per_gpu(M70, 8, ctx, B, B)
    assert round(b["weight_bytes"] / 1e9, 3) == 17.375 and round(b["kv_bytes"] / 1e9, 3) == 21.475
    d = (b["weight_bytes"] + b["kv_bytes"]) / (H100.hbm_bytes_per_s * 0.8) + 1.2e-3
    assert round(1e3 * d, 3) == 15.696
    one = [dict(step=0, t_start_s=0.0, duration_s=d, context_lens=ctx, num_prefill_tokens=0)]
    n = ref.dashboard_numbers(one, M70, H100, 8, B, B, 0.8)
    assert (pct(n["correct"]), pct(n["weights_only"]), pct(n["kv_once_per_batch"])) == (73.9, 33.0, 33.7)
    s = ref.dashboard_numbers(stall_log(), M70, H100, 8, B, B, 0.8)
    assert (pct(s["correct"]), pct(s["mean_of_ratios"])) == (51.1, 64.7)
    assert round(pct(s["mean_of_ratios"]) - pct(s["correct"]), 1) == 13.6
    assert round(pct(n["correct"]) - pct(n["weights_only"])) == 41 and round(pct(n["correct"]) - pct(n["kv_once_per_batch"])) == 40


def test_gpt_fast_anchor():
    # README figures (measured by the gpt-fast authors, A100-80GB at 330 W, batch 1)
    assert pct(1397.31e9 / specs.A100_SXM_80GB.hbm_bytes_per_s) == 68.5
    assert pct(1397.31 / 1700) == 82.2
    assert round(pct(1397.31 / 1700) - pct(1397.31e9 / specs.A100_SXM_80GB.hbm_bytes_per_s), 1) == 13.7
    assert pct(1129.61e9 / specs.A100_SXM_80GB.hbm_bytes_per_s) == 55.4
    assert pct(1129.61e9 / (8 * specs.A100_SXM_80GB.hbm_bytes_per_s)) == 6.9
    # gpt-fast's per-rank size at TP 8: layers sharded, LM head (`output`) replicated
    P, head = ref.decode_weight_params(M70), M70.vocab_size * M70.hidden_size
    assert round(((P - head) / 8 * 2 + head * 2) / 1e9, 2) == 19.21
    assert round(((P - head) / 8 * 2 + head * 2) * 58.78 / 1e9, 1) == 1129.4
    assert round(P * 2 / 8 * 58.78 / 1e9) == 1021


if __name__ == "__main__":
    print(mbu_svg())
