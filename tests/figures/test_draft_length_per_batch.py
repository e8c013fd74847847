"""Every figure of the draft-length-per-batch statement and editorial, computed by the reference;
the editorial's heat map (best K by batch and context) is regenerated here and must match."""

import dataclasses
import math
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "draft_length_per_batch.py", "ref_draft_length_per_batch")
EDITORIAL = ROOT / "exercises" / "draft-length-per-batch" / "editorial.md"
T = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
D = ref.eagle_head(T, 0.0002)
KV = 1_235_951
CONTEXTS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
PALETTE = ["#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5",
           "#08519c", "#08306b"]


def heatmap_svg() -> str:
    """Best K (alpha 0.8, g_max 8) by batch (log scale, 1..1024) and cached tokens per request."""
    L, R, Tp, B, rowh = 70, 20, 30, 50, 26
    W = 620
    H = Tp + rowh * len(CONTEXTS) + B
    span = W - L - R

    def px(b):                                   # left edge of batch b on a log axis to 1025
        return L + math.log(b) / math.log(1025) * span

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">']
    for k, c in enumerate(CONTEXTS):
        y = Tp + rowh * k
        out.append(f'<text x="{L - 6}" y="{y + 17}" text-anchor="end">{c}</text>')
        rows = ref.draft_table(T, D, c, 0.8, 8, 1024, KV)
        for start, end, g in rows:
            x0, x1 = px(start), px(end + 1)
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{x1 - x0:.1f}" height="{rowh - 2}" '
                       f'fill="{PALETTE[g]}"/>')
            if x1 - x0 >= 12:
                color = "#fff" if g >= 5 else "#000"
                out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y + 17}" text-anchor="middle" '
                           f'fill="{color}">{g}</text>')
        b_max = rows[-1][1]
        if b_max < 1024:
            x0 = px(b_max + 1)
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{px(1025) - x0:.1f}" height="{rowh - 2}" '
                       f'fill="#bbb"/>')
            out.append(f'<text x="{(x0 + px(1025)) / 2:.1f}" y="{y + 17}" text-anchor="middle" '
                       f'fill="#333">KV full</text>')
    ybase = Tp + rowh * len(CONTEXTS)
    for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
        x = px(b) + (px(b + 1) - px(b)) / 2
        out.append(f'<text x="{x:.1f}" y="{ybase + 14}" text-anchor="middle">{b}</text>')
    out.append(f'<text x="{L + span / 2:.0f}" y="{H - 12}" text-anchor="middle">batch size '
               '(requests in the step)</text>')
    out.append(f'<text x="14" y="{Tp + rowh * len(CONTEXTS) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {Tp + rowh * len(CONTEXTS) / 2:.0f})">cached tokens</text>')
    out.append(f'<text x="{L}" y="18">best draft length K (alpha 0.8, EAGLE head, 70B on 8x H100)</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == heatmap_svg(), "regenerate the SVG: print(heatmap_svg())"


def test_preset_constants():
    assert ref.story_kv_capacity_tokens(T) == KV
    assert round(KV * T.kv_bytes_per_token / 1e9) == 405 and T.kv_bytes_per_token == 327_680
    assert round(1e3 * ref.spec_step_time(T, D, 1, 2048, 0), 2) == 9.51
    assert round(1e3 * ref.spec_step_time(D, D, 1, 2048, 0), 3) == 0.378
    assert round(ref.spec_step_time(D, D, 1, 2048, 0) / ref.spec_step_time(T, D, 1, 2048, 0), 3) == 0.040
    assert round(1e3 * ref.spec_step_time(T, D, 1, 2048, 4), 2) == 11.03
    assert D == dataclasses.replace(T, model=dataclasses.replace(specs.LLAMA_3_1_70B, n_layers=1,
                                                                 name=D.model.name), t_fixed_s=0.0002)
    assert round(T.gemm_knee_tokens(), 1) == 224.9


def test_night_and_rush_hour():
    assert round(ref.spec_speedup(T, D, 1, 2048, 4, 0.8), 3) == 2.900
    assert ref.best_draft_length(T, D, 1, 2048, 0.8, 8) == 8
    assert round(ref.spec_speedup(T, D, 1, 2048, 8, 0.8), 3) == 3.284
    assert round(ref.expected_tokens(0.8, 4), 4) == 3.3616
    assert round(ref.compute_bound_limit(0.8, 4), 3) == 0.672
    assert round(100 * (1 - ref.compute_bound_limit(0.8, 4)), 1) == 32.8
    rush = {c: ref.spec_speedup(T, D, b, c, 4, 0.8)
            for b, c in [(1024, 128), (1024, 256), (1024, 512), (1024, 1024), (600, 2048), (150, 8192)]}
    assert round(rush[128], 3) == 0.739 and round(100 * (1 - rush[128]), 1) == 26.1
    assert round(100 * (1 - rush[256]), 1) == 22.9 and round(100 * (1 - rush[512]), 1) == 16.7
    assert round(100 * (1 - rush[1024]), 1) == 5.2
    assert round(100 * (rush[2048] - 1), 1) == 16.8 and round(100 * (rush[8192] - 1), 1) == 105.7
    assert ref.best_draft_length(T, D, 1024, 128, 0.8, 8) == 0
    assert ref.best_draft_length(T, D, 600, 2048, 0.8, 8) == 2
    assert round(ref.spec_speedup(T, D, 600, 2048, 2, 0.8), 3) == 1.258
    assert ref.best_draft_length(T, D, 150, 8192, 0.8, 8) == 4
    # g = 4 at batch 32 is still ~2.9x; by batch 64 the verify GEMMs (320 tokens) are compute-bound
    assert round(ref.spec_speedup(T, D, 32, 512, 4, 0.8), 2) == 2.91
    assert round(ref.spec_speedup(T, D, 64, 512, 4, 0.8), 2) == 2.33
    # a longer rush hour: batch 4096 at 128 tokens with a free drafter fixed cost
    D0 = ref.eagle_head(T, 0.0)
    assert round(100 * (1 - ref.spec_speedup(T, D0, 4096, 128, 4, 0.8)), 1) == 29.5


TABLES = {
    128: [[1, 25, 8], [26, 28, 7], [29, 33, 6], [34, 40, 5], [41, 51, 4], [52, 70, 3], [71, 110, 2],
          [111, 429, 1], [430, 1024, 0]],
    256: [[1, 25, 8], [26, 28, 7], [29, 33, 6], [34, 40, 5], [41, 51, 4], [52, 70, 3], [71, 115, 2],
          [116, 614, 1], [615, 1024, 0]],
    512: [[1, 25, 8], [26, 28, 7], [29, 33, 6], [34, 41, 5], [42, 52, 4], [53, 71, 3], [72, 143, 2],
          [144, 1024, 1]],
    2048: [[1, 25, 8], [26, 28, 7], [29, 34, 6], [35, 41, 5], [42, 53, 4], [54, 90, 3], [91, 600, 2]],
    8192: [[1, 25, 8], [26, 29, 7], [30, 35, 6], [36, 43, 5], [44, 150, 4]],
    32768: [[1, 26, 8], [27, 37, 7]],
}


@pytest.mark.parametrize("c", sorted(TABLES))
def test_tables(c):
    assert ref.draft_table(T, D, c, 0.8, 8, 1024, KV) == TABLES[c]


def test_table_variants():
    assert ref.max_batch(2048, 8, 1024, KV) == 600 and ref.max_batch(8192, 8, 1024, KV) == 150
    assert ref.draft_table(T, D, 512, 0.6, 8, 1024, KV) == [
        [1, 46, 4], [47, 62, 3], [63, 96, 2], [97, 218, 1], [219, 1024, 0]]
    assert ref.draft_table(T, D, 512, 0.9, 8, 1024, KV)[-1] == [779, 1024, 1]
    # the exact tie of the hidden cases: every g gives the same throughput at batch 4
    gpu = dataclasses.replace(specs.H100_SXM, name="dyadic", hbm_bytes_per_s=float(2 ** 40),
                              bf16_dense_flops=float(2 ** 60))
    tiny = specs.ModelConfig(name="tiny", n_layers=2, hidden_size=64, n_heads=4, n_kv_heads=1,
                             head_dim=16, ffn_size=128, vocab_size=256)
    t = StepModel(tiny, gpu, 1, mfu=1.0, mbu=1.0, t_fixed_s=2.0 ** -10)
    d = ref.eagle_head(t, 4194675 / 2 ** 32)
    assert len({ref.spec_speedup(t, d, 4, 100, g, 1.0) for g in range(6)}) == 1
    assert ref.best_draft_length(t, d, 4, 100, 1.0, 5) == 0
    assert ref.draft_table(t, d, 100, 1.0, 5, 12, 10 ** 9) == [[1, 4, 0], [5, 12, 5]]


if __name__ == "__main__":
    print(heatmap_svg())


def test_editorial_extras():
    assert round(T.weight_bytes / 1e9, 1) == 139.0
    assert round(1e3 * T.weight_bytes / T.bytes_per_s, 2) == 6.48
    assert 25 * 9 == 225
    # eight-draft verify GEMMs turn compute-bound at batch 25 (LM head counted), decode at 222
    assert T.breakdown([(9, 512, 9)] * 24)["gemm_bound"] == "memory"
    assert T.breakdown([(9, 512, 9)] * 25)["gemm_bound"] == "compute"
    assert T.breakdown([(1, 512, 1)] * 221)["gemm_bound"] == "memory"
    assert T.breakdown([(1, 512, 1)] * 222)["gemm_bound"] == "compute"
    assert ref.best_draft_length(T, D, 25, 512, 0.8, 8) == 8
    assert ref.best_draft_length(T, D, 26, 512, 0.8, 8) == 7
    assert round(1024 / T.gemm_knee_tokens()) == 5 and 1024 > 4 * T.gemm_knee_tokens()
    mins = [min(k for _, _, k in ref.draft_table(T, D, c, 0.8, 8, 1024, KV))
            for c in (128, 512, 2048, 8192, 32768)]
    assert mins == [0, 1, 2, 4, 7]
    # mfu 0.4 instead of 0.6: the knee scales with mfu
    T4 = dataclasses.replace(T, mfu=0.4)
    assert round(T4.gemm_knee_tokens() / T.gemm_knee_tokens(), 3) == round(0.4 / 0.6, 3)
    assert ref.draft_table(T4, ref.eagle_head(T4, 0.0002), 512, 0.8, 8, 1024, KV)[0][1] < 25
