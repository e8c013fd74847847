"""Every figure of the speculative-decoding-basics statement and editorial, computed by the
reference; the editorial's tokens-per-step picture is regenerated here and must match."""

from fractions import Fraction as Fr
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "speculative_decoding_basics.py", "ref_speculative_decoding_basics")
EDITORIAL = ROOT / "exercises" / "speculative-decoding-basics" / "editorial.md"
PEAK = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8)
S_SPEC = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
CURVES = (1, 2, 4, 8)


def tokens_svg() -> str:
    """Expected tokens per verification step against acceptance, one curve per draft length."""
    W, H, L, R, T, B = 560, 320, 50, 110, 20, 40
    ymax = 9.0

    def px(a):
        return L + a * (W - L - R)

    def py(e):
        return T + (ymax - e) / (ymax - 1.0) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for a in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
        out.append(f'<text x="{px(a):.1f}" y="{H - B + 14}" text-anchor="middle">{a:.1f}</text>')
    for e in (1, 3, 5, 7, 9):
        out.append(f'<text x="{L - 4}" y="{py(e) + 4:.1f}" text-anchor="end">{e}</text>')
        out.append(f'<line x1="{L}" y1="{py(e):.1f}" x2="{W - R}" y2="{py(e):.1f}" stroke="#eee"/>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">'
               'acceptance alpha</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">tokens per step</text>')
    colors = {1: "#1f77b4", 2: "#2ca02c", 4: "#d62728", 8: "#9467bd"}
    for g in CURVES:
        pts = [(i / 50, ref.expected_tokens(i / 50, g)) for i in range(51)]
        path = " ".join(f"{px(a):.1f},{py(e):.1f}" for a, e in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colors[g]}" stroke-width="2"/>')
        out.append(f'<text x="{px(1.0) + 6:.1f}" y="{py(g + 1) + 4:.1f}" fill="{colors[g]}">'
                   f'g = {g}: {g + 1} at 1</text>')
    e = ref.expected_tokens(0.8, 4)
    out.append(f'<circle cx="{px(0.8):.1f}" cy="{py(e):.1f}" r="4" fill="#d62728"/>')
    out.append(f'<line x1="{px(0.42):.1f}" y1="{py(7.0):.1f}" x2="{px(0.8):.1f}" y2="{py(e):.1f}" '
               'stroke="#999"/>')
    out.append(f'<text x="{px(0.05):.1f}" y="{py(7.0) - 4:.1f}">g = 4, alpha 0.8: {e:.4f} tokens</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == tokens_svg(), "regenerate the SVG: print(tokens_svg())"


def test_tokens_per_step():
    row = [round(ref.expected_tokens(0.8, g), 4) for g in range(9)]
    assert row == [1.0, 1.8, 2.44, 2.952, 3.3616, 3.6893, 3.9514, 4.1611, 4.3289]
    assert ref.expected_tokens(0.8, 4) == pytest.approx(3.3616, rel=1e-12)
    assert ref.expected_tokens(1.0, 3) == 4.0 and ref.expected_tokens(0.0, 5) == 1.0
    # the ceiling 1 / (1 - alpha) = 5 at 0.8; g = 8 already gets 4.33 of it
    assert round(1 / (1 - 0.8)) == 5 and round(ref.expected_tokens(0.8, 8), 2) == 4.33
    # vLLM's "Avg Draft acceptance rate" is (E - 1) / g, not alpha
    assert round((ref.expected_tokens(0.8, 4) - 1) / 4, 4) == 0.5904
    assert [round(0.8 ** (i + 1), 4) for i in range(4)] == [0.8, 0.64, 0.512, 0.4096]
    # at alpha 0.6 (editorial): g = 4 gives 2.3056, g = 8 gives 2.4748
    assert round(ref.expected_tokens(0.6, 4), 4) == 2.3056
    assert round(ref.expected_tokens(0.6, 8), 4) == 2.4748


def test_identity_and_wrong_rules():
    p, q = ["1/2", "3/10", "1/5"], ["1/5", "1/2", "3/10"]
    d = ref.emitted_distribution(p, q)
    assert d == {"alpha": "7/10", "accepted": ["1/5", "3/10", "1/5"],
                 "resampled": ["3/10", "0", "0"], "emitted": ["1/2", "3/10", "1/5"]}
    P, Q = [Fr(x) for x in p], [Fr(x) for x in q]
    assert Fr(d["alpha"]) == 1 - sum(abs(a - b) for a, b in zip(P, Q)) / 2
    # classic wrong rules on the same p, q
    alpha = Fr(7, 10)
    from_p = [min(a, b) + (1 - alpha) * a for a, b in zip(P, Q)]
    assert from_p == [Fr(35, 100), Fr(39, 100), Fr(26, 100)]
    acc_inv = [b * min(Fr(1), b / a) for a, b in zip(P, Q)]
    res = [max(Fr(0), a - b) for a, b in zip(P, Q)]
    inv = [x + (1 - sum(acc_inv)) * r / sum(res) for x, r in zip(acc_inv, res)]
    assert inv == Q and sum(acc_inv) == Fr(22, 25)
    assert sum(a * b for a, b in zip(P, Q)) == Fr(31, 100)
    eq = ref.emitted_distribution(["1/3", "2/3"], ["1/3", "2/3"])
    assert eq["alpha"] == "1" and eq["resampled"] == ["0", "0"]
    dis = ref.emitted_distribution(["1/2", "1/2", "0"], ["0", "0", "1"])
    assert dis["alpha"] == "0" and dis["emitted"] == ["1/2", "1/2", "0"]


def test_spare_compute():
    pk = {g: ref.spare_compute_batch(PEAK, g)["max_batch"] for g in (0, 1, 2, 4, 7)}
    assert pk == {0: 295, 1: 147, 2: 98, 4: 59, 7: 36}
    assert round(ref.spare_compute_batch(PEAK, 4)["knee_tokens"], 2) == 295.34
    ss = {g: ref.spare_compute_batch(S_SPEC, g)["max_batch"] for g in (0, 1, 2, 4, 7)}
    assert ss == {0: 221, 1: 110, 2: 73, 4: 44, 7: 27}
    assert round(ref.spare_compute_batch(S_SPEC, 4)["knee_tokens"], 2) == 221.51
    # the knee is the ridge times s_w / 2 whatever the model: the parameter counts cancel
    ridge = specs.H100_SXM.bf16_dense_flops / specs.H100_SXM.hbm_bytes_per_s
    assert ref.spare_compute_batch(PEAK, 0)["knee_tokens"] == pytest.approx(ridge, rel=1e-12)
    one = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1)
    assert ref.spare_compute_batch(one, 4)["max_batch"] == 59
    # FP8 weights and FP8 math: twice the FLOP/s, half the bytes, same knee
    fp8 = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, dtype=DType.FP8)
    assert ref.spare_compute_batch(fp8, 4)["max_batch"] == 59
    # other GPUs at peak, g = 4
    got = {gpu.name: ref.spare_compute_batch(StepModel(specs.LLAMA_3_1_8B, gpu, 1), 4)["max_batch"]
           for gpu in (specs.H200_SXM, specs.B200, specs.A100_SXM_80GB)}
    assert got == {"H200 SXM": 41, "B200": 58, "A100 SXM 80GB": 30}
    # leaving out the logit rows' FLOPs (the notes' first count) moves the knee to 299.9
    sm = PEAK
    no_head = sm.weight_bytes / sm.bytes_per_s * sm.flops_per_s / (2 * sm.body_params)
    assert round(no_head, 1) == 299.9 and int(no_head // 2) == 149 and int(no_head // 5) == 59
    # Leviathan et al.'s wall-time factor E / (1 + g c) with a drafter costing c = 5% per token
    assert round(ref.expected_tokens(0.8, 4) / (1 + 4 * 0.05), 2) == 2.80


if __name__ == "__main__":
    print(tokens_svg())
