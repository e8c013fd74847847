"""Every figure of the kv-per-gpu-tp statement and editorial, computed by the reference; the
editorial's per-GPU KV picture is regenerated here from the reference and must match."""

import math
from pathlib import Path

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "kv_per_gpu_tp.py", "ref_kv_per_gpu_tp")
EDITORIAL = ROOT / "exercises" / "kv-per-gpu-tp" / "editorial.md"
GQA, MLA, BF, FP8 = specs.LLAMA_3_1_70B, specs.DEEPSEEK_V3, DType.BF16, DType.FP8
KiB, GiB = 2**10, 2**30
# 8 x H200: requested ceil(141e9 x 0.9), minus weights / 8, minus 4 GiB (activations, non-torch, graphs)
FREE_GQA = math.ceil(141e9 * 0.9) - 70_552_387_584 * 2 // 8 - 4 * GiB     # Llama 3.1 70B, BF16
FREE_MLA = math.ceil(141e9 * 0.9) - 671_025_397_760 // 8 - 4 * GiB        # DeepSeek-V3, FP8 weights


def per_gpu(m, tp, dcp=1, dt=BF):
    return ref.kv_bytes_per_token_per_gpu(m, tp, dt, dcp)


def kv_svg() -> str:
    """Grouped bars: KiB per token per GPU at TP 1..16, GQA vs MLA vs MLA with dcp = tp."""
    W, H, L, R, T, B = 560, 280, 60, 20, 30, 50
    ymax = 340.0
    tps = (1, 2, 4, 8, 16)
    series = (("Llama 3.1 70B (GQA, 8 KV heads)", "#1f77b4", lambda tp: per_gpu(GQA, tp)),
              ("DeepSeek-V3 (MLA)", "#d62728", lambda tp: per_gpu(MLA, tp)),
              ("DeepSeek-V3, dcp = tp", "#ff9896", lambda tp: per_gpu(MLA, tp, tp)))
    gw = (W - L - R) / len(tps)
    bw = gw / 4

    def py(kib):
        return T + (ymax - kib) / ymax * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<line x1="{L}" y1="{py(0):.1f}" x2="{W - R}" y2="{py(0):.1f}" stroke="#999"/>']
    for v in (0, 100, 200, 300):
        out.append(f'<text x="{L - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v}</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">KiB per token per GPU (BF16)</text>')
    for i, tp in enumerate(tps):
        x0 = L + i * gw + bw / 2
        for j, (_, color, f) in enumerate(series):
            kib = f(tp) / KiB
            x = x0 + j * bw
            out.append(f'<rect x="{x:.1f}" y="{py(kib):.1f}" width="{bw - 2:.1f}" '
                       f'height="{py(0) - py(kib):.1f}" fill="{color}"/>')
            out.append(f'<text x="{x + bw / 2 - 1:.1f}" y="{py(kib) - 3:.1f}" text-anchor="middle" '
                       f'font-size="9">{kib:.0f}</text>')
        out.append(f'<text x="{L + (i + 0.5) * gw:.1f}" y="{py(0) + 14:.1f}" '
                   f'text-anchor="middle">TP {tp}</text>')
    for j, (label, color, _) in enumerate(series):
        x = L + 10 + (0, 190, 310)[j]
        out.append(f'<rect x="{x}" y="{H - 18}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14}" y="{H - 9}" font-size="10">{label}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == kv_svg(), "regenerate the SVG: print(kv_svg())"


def test_per_token_and_per_gpu():
    assert per_gpu(GQA, 1) == 327_680 and per_gpu(GQA, 1) / KiB == 320
    assert per_gpu(MLA, 1) == 70_272 and per_gpu(MLA, 1) / KiB == 68.625
    assert round(per_gpu(GQA, 1) / per_gpu(MLA, 1), 2) == 4.66
    assert [per_gpu(GQA, tp) / KiB for tp in (1, 2, 4, 8, 16)] == [320, 160, 80, 40, 40]
    assert {per_gpu(MLA, tp) for tp in (1, 2, 4, 8, 16)} == {70_272}
    assert round(per_gpu(MLA, 8) / per_gpu(GQA, 8), 2) == 1.72
    assert round(per_gpu(MLA, 8) / per_gpu(GQA, 8), 1) == 1.7
    # summed over the 8 GPUs of the node
    assert 8 * per_gpu(MLA, 8) / KiB == 549 and 8 * per_gpu(GQA, 8) / KiB == 320
    assert [per_gpu(MLA, 8, d) for d in (1, 2, 4, 8)] == [70_272, 35_136, 17_568, 8_784]
    assert per_gpu(MLA, 16, 16) == 4_392
    assert per_gpu(specs.KIMI_K2, 8, 8) == 8_784
    # GQA replicated heads at TP 16: dcp 2 removes the duplicate
    assert per_gpu(GQA, 16, 2) == 20_480


def test_budgets():
    assert ref.max_request_tokens(GQA, 8, BF, 20 * GiB) == 524_288
    assert ref.max_request_tokens(MLA, 8, BF, 20 * GiB) == 305_595
    assert ref.max_request_tokens(MLA, 8, BF, 20 * GiB, 8) == 2_444_760
    assert FREE_GQA == 104_966_935_808 and round(FREE_GQA / 1e9, 2) == 104.97
    assert FREE_MLA == 38_726_857_984 and round(FREE_MLA / 1e9, 2) == 38.73
    assert round(70_552_387_584 * 2 / 8 / 1e9, 2) == 17.64
    assert round(671_025_397_760 / 8 / 1e9, 2) == 83.88
    assert ref.max_request_tokens(GQA, 8, BF, FREE_GQA) == 2_562_669
    assert ref.max_request_tokens(MLA, 8, BF, FREE_MLA) == 551_099
    assert ref.max_request_tokens(MLA, 8, FP8, FREE_MLA) == 1_102_198
    assert ref.max_request_tokens(MLA, 8, BF, FREE_MLA, 8) == 4_408_792
    assert round(600_000 * per_gpu(GQA, 8) / 1e9, 2) == 24.58
    assert round(600_000 * per_gpu(MLA, 8) / 1e9, 2) == 42.16
    deps = [{"model": GQA, "tp": 8, "kv_dtype": BF, "free_kv_bytes_per_gpu": FREE_GQA},
            {"model": MLA, "tp": 8, "kv_dtype": BF, "free_kv_bytes_per_gpu": FREE_MLA},
            {"model": MLA, "tp": 8, "kv_dtype": BF, "free_kv_bytes_per_gpu": FREE_MLA, "dcp": 8},
            {"model": MLA, "tp": 8, "kv_dtype": FP8, "free_kv_bytes_per_gpu": FREE_MLA}]
    assert ref.which_fits(600_000, deps) == [True, False, True, True]
    # the busiest rank holds ceil(T / 8): the average-bytes division says 7 tokens more
    assert (20 * GiB * 8) // 70_272 == 2_444_767

if __name__ == "__main__":
    print(kv_svg())
