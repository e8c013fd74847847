"""Every figure of the gqa-attention-intensity statement and editorial, from the reference."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "gqa_attention_intensity.py", "ref_gqa_attention_intensity")
H100, BF16, FP8 = specs.H100_SXM, DType.BF16, DType.FP8


@pytest.mark.parametrize("m, intensity, share", [
    (specs.LLAMA_3_1_8B, 4.0, 1.35), (specs.LLAMA_3_1_70B, 8.0, 2.71),
    (specs.MIXTRAL_8X7B, 4.0, 1.35), (specs.DEEPSEEK_V3, 241.8, 81.9),
])
def test_table(m, intensity, share):
    r = ref.attention_regime(m, H100, BF16, BF16)
    assert round(r["intensity"], 1) == intensity
    assert round(100 * r["fraction_of_ridge"], 2 if share < 10 else 1) == share
    assert r["bound"] == "memory"


def test_batch_and_context_do_not_move_it():
    m = specs.LLAMA_3_1_8B
    vals = {ref.decode_attention_intensity(m, BF16, b, L) for b in (1, 4096) for L in (1, 8192, 10**6)}
    assert vals == {4.0}
    assert ref.decode_weight_gemm_intensity(64, BF16) == 64.0


def test_group_sizes():
    assert ref.heads_per_kv_head_for_ridge(H100, BF16, BF16) == 296
    assert ref.heads_per_kv_head_for_ridge(H100, FP8, BF16) == 148
    assert round(ref.attention_regime(specs.LLAMA_3_1_8B, H100, BF16, BF16)["ridge"], 1) == 295.3


def test_mla():
    d = specs.DEEPSEEK_V3
    assert (d.kv_lora_rank, d.qk_rope_head_dim, d.n_heads) == (512, 64, 128)
    assert 2 * 128 * 1088 / (576 * 2) == pytest.approx(ref.decode_attention_intensity(d, BF16, 1, 1))
    r8 = ref.attention_regime(d, H100, FP8, BF16)
    assert round(r8["intensity"], 1) == 483.6 and round(r8["fraction_of_ridge"], 2) == 1.64
    assert r8["bound"] == "compute"
    r88 = ref.attention_regime(d, H100, FP8, FP8)
    assert round(100 * r88["fraction_of_ridge"], 1) == 81.9 and r88["bound"] == "memory"


def test_mla_tensor_parallel():
    import dataclasses
    d = specs.DEEPSEEK_V3
    for tp, intensity, share in ((8, 30.2, 10), (4, 60.4, 20)):
        shard = dataclasses.replace(d, n_heads=d.n_heads // tp)     # heads per GPU, full latent each
        r = ref.attention_regime(shard, H100, BF16, BF16)
        assert round(r["intensity"], 1) == intensity and round(100 * r["fraction_of_ridge"]) == share
    assert round(2 * 16 * 1088 / (576 * 2), 1) == 30.2
    # GQA under TP: query and KV heads shard together, H/K unchanged
    m = specs.LLAMA_3_1_70B
    shard = dataclasses.replace(m, n_heads=m.n_heads // 8, n_kv_heads=m.n_kv_heads // 8)
    assert ref.decode_attention_intensity(shard, BF16, 1, 1) == ref.decode_attention_intensity(m, BF16, 1, 1)


EDITORIAL = ROOT / "exercises" / "gqa-attention-intensity" / "editorial.md"


def roofline_svg() -> str:
    """Log-log H100 BF16 roofline with decode attention and weight-GEMM operating points."""
    import math

    W, Hh, L, R, T, Bm = 560, 300, 60, 20, 20, 40
    xmin, xmax, ymin, ymax = 0.0, 3.0, 12.0, 15.3

    def px(i):
        return L + (math.log10(i) - xmin) / (xmax - xmin) * (W - L - R)

    def py(f):
        return T + (ymax - math.log10(f)) / (ymax - ymin) * (Hh - T - Bm)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{Hh}" '
           f'viewBox="0 0 {W} {Hh}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{Hh - T - Bm}" fill="none" stroke="#999"/>']
    for e in range(0, 4):
        out.append(f'<text x="{px(10 ** e):.1f}" y="{Hh - Bm + 14}" text-anchor="middle">{10 ** e}</text>')
    for e in range(12, 16):
        out.append(f'<text x="{L - 4}" y="{py(10 ** e) + 4:.1f}" text-anchor="end">1e{e}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{Hh - 8}" text-anchor="middle">'
               'arithmetic intensity (FLOP/byte)</text>')
    ridge = ref.attention_regime(specs.LLAMA_3_1_8B, H100, BF16, BF16)["ridge"]
    peak, bw = H100.bf16_dense_flops, H100.hbm_bytes_per_s
    pts = " ".join(f"{px(i):.1f},{py(f):.1f}" for i, f in ((1.0, bw), (ridge, peak), (10 ** xmax, peak)))
    out.append(f'<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    out.append(f'<text x="{px(ridge) + 4:.1f}" y="{py(peak) - 6:.1f}" fill="#1f77b4">'
               f'H100 BF16 ridge {ridge:.0f}</text>')
    points = [("Llama 3.1 8B attn", ref.decode_attention_intensity(specs.LLAMA_3_1_8B, BF16, 1, 1), "#d62728", 14),
              ("70B attn", ref.decode_attention_intensity(specs.LLAMA_3_1_70B, BF16, 1, 1), "#d62728", -8),
              ("GEMM b=64", ref.decode_weight_gemm_intensity(64, BF16), "#2ca02c", 14),
              ("MLA attn", ref.decode_attention_intensity(specs.DEEPSEEK_V3, BF16, 1, 1), "#9467bd", 14),
              ("MLA, FP8 cache", ref.decode_attention_intensity(specs.DEEPSEEK_V3, FP8, 1, 1), "#9467bd", 14)]
    for label, i, color, dy in points:
        f = min(peak, i * bw)
        out.append(f'<circle cx="{px(i):.1f}" cy="{py(f):.1f}" r="4" fill="{color}"/>')
        out.append(f'<text x="{px(i) + 6:.1f}" y="{py(f) + dy:.1f}" fill="{color}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == roofline_svg(), "regenerate the SVG: print(roofline_svg())"


if __name__ == "__main__":
    print(roofline_svg())
