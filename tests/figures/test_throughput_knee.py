"""Every figure quoted by throughput-knee's statement and editorial, from the reference."""

from pathlib import Path

from inferprep.grading import load_module
from inferprep.specs import H100_SXM, H200_SXM, LLAMA_3_1_8B as M, DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "throughput_knee.py", "_fig_throughput_knee")

D = M.hidden_size
PARAMS = M.n_layers * (2 * D * M.n_heads * M.head_dim + 2 * D * M.n_kv_heads * M.head_dim
                       + 3 * D * M.ffn_size) + D * M.vocab_size          # no embedding table
KV = 2 * M.n_layers * M.n_kv_heads * M.head_dim * 2
CTX = 4096
FLOPS = 2 * PARAMS + 4 * M.n_layers * M.n_heads * M.head_dim * CTX


def story(gpu):
    a, c = ref.step_time_coefficients(2 * PARAMS, KV, CTX, FLOPS, gpu, DType.BF16, 0.5e-3)
    pool = int(0.9 * gpu.hbm_bytes) - 2 * PARAMS - 4 * 10**9
    mb = ref.max_batch_kv(pool, KV, CTX, 16)
    return a, c, pool, mb, ref.throughput_report(a, c, mb, 0.9)


def test_statement_examples():
    assert ref.knee_batch(0.005, 0.0002) == 25.0
    assert ref.batch_for_fraction(0.005, 0.0002, 0.85) == 142
    assert round(0.85 / 0.15 * 25, 2) == 141.67
    assert ref.max_batch_kv(10**9, 131072, 1000, 16) == 7
    assert 63 * 16 * 131072 == 132_120_576


def test_model_terms():
    assert round(PARAMS / 1e9, 2) == 7.50 and round(2 * PARAMS / 1e9, 1) == 15.0
    assert KV == 131072
    assert round(FLOPS / 1e9, 1) == 17.2


def test_h100_story():
    a, c, pool, mb, r = story(H100_SXM)
    assert round(a * 1e3, 2) == 4.98 and round(c * 1e3, 3) == 0.178
    assert round(100 * CTX * KV / H100_SXM.hbm_bytes_per_s / c) == 90
    assert round(r["knee_batch"]) == 28
    assert round(r["ceiling_tokens_per_s"]) == 5631
    assert r["batch_for_fraction"] == 253
    assert round(H100_SXM.dense_flops(DType.BF16) / FLOPS) == 57668
    assert round(pool / 1e9, 1) == 53.0 and CTX // 16 == 256 and CTX * KV == 512 * 2**20
    assert mb == 98
    assert round(r["max_throughput_tokens_per_s"]) == 4378
    assert round(100 * r["fraction_of_ceiling"]) == 78
    assert r["binding"] == "kv_cache"


def test_h200_story():
    a, c, pool, mb, r = story(H200_SXM)
    assert round(a * 1e3, 2) == 3.63 and round(c * 1e3, 3) == 0.129
    assert round(r["knee_batch"]) == 28
    assert round(r["ceiling_tokens_per_s"]) == 7741
    assert round(pool / 1e9, 1) == 107.9 and mb == 200
    assert round(r["max_throughput_tokens_per_s"]) == 6788
    assert round(100 * r["fraction_of_ceiling"]) == 88
    assert r["binding"] == "kv_cache"
    h100 = story(H100_SXM)[4]
    assert round(r["max_throughput_tokens_per_s"] / h100["max_throughput_tokens_per_s"], 2) == 1.55
    assert round(H200_SXM.hbm_bytes_per_s / H100_SXM.hbm_bytes_per_s, 2) == 1.43


def test_fraction_rule():
    a, c = story(H100_SXM)[:2]
    assert ref.batch_for_fraction(a, c, 0.9) == __import__("math").ceil(9 * a / c)     # nine knees
    assert ref.batch_for_fraction(a, c, 0.99) == __import__("math").ceil(99 * a / c)   # 99 knees


def test_knee_is_steady_by_coincidence():
    """The knee a/c = (W + o*B) / (K + (F/P)*B): only the weight and KV reads scale with bandwidth."""
    P = H100_SXM.dense_flops(DType.BF16)
    assert P == H200_SXM.dense_flops(DType.BF16)
    h100, h200 = story(H100_SXM), story(H200_SXM)
    assert round(h100[4]["knee_batch"], 2) == 28.04 and round(h200[4]["knee_batch"], 2) == 28.07
    assert round(FLOPS / P * 1e6, 1) == 17.3
    assert round(CTX * KV / 1e6) == 537
    assert [round(100 * 0.5e-3 / s[0]) for s in (h100, h200)] == [10, 14]           # overhead share of a
    assert [round(100 * FLOPS / P / s[1]) for s in (h100, h200)] == [10, 13]        # compute share of c
    assert round(2 * PARAMS / (CTX * KV), 2) == 27.96                               # W / K
    assert round(0.5e-3 / (2 * PARAMS) * 1e14, 2) == 3.33
    assert round(FLOPS / P / (CTX * KV) * 1e14, 2) == 3.23
    for o, knees in ((0.0, (25.2, 24.2)), (2e-3, (36.5, 39.7))):
        got = tuple(round(ref.knee_batch(*ref.step_time_coefficients(2 * PARAMS, KV, CTX, FLOPS, gpu, DType.BF16, o)), 1)
                    for gpu in (H100_SXM, H200_SXM))
        assert got == knees
    # and the identity: with o/W = (F/P)/K the knee is W/K at any bandwidth
    o = FLOPS / P / (CTX * KV) * 2 * PARAMS
    for gpu in (H100_SXM, H200_SXM):
        a, c = ref.step_time_coefficients(2 * PARAMS, KV, CTX, FLOPS, gpu, DType.BF16, o)
        assert abs(a / c - 2 * PARAMS / (CTX * KV)) < 1e-9


EDITORIAL = ROOT / "exercises" / "throughput-knee" / "editorial.md"


def knee_svg() -> str:
    """Throughput against batch for the editorial's H100 and H200 stories, from the reference."""
    W, H, L, R, T, B = 560, 300, 60, 20, 20, 40
    xmax, ymax = 300, 8000

    def px(b):
        return L + b / xmax * (W - L - R)

    def py(x):
        return T + (1 - x / ymax) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for b in range(0, xmax + 1, 50):
        out.append(f'<text x="{px(b):.1f}" y="{H - B + 14}" text-anchor="middle">{b}</text>')
    for x in range(0, ymax + 1, 2000):
        out.append(f'<text x="{L - 4}" y="{py(x) + 4:.1f}" text-anchor="end">{x}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">decode batch b</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">tokens/s</text>')
    for gpu, color in ((H100_SXM, "#1f77b4"), (H200_SXM, "#d62728")):
        a, c, _, mb, r = story(gpu)
        pts = " ".join(f"{px(b):.1f},{py(b / (a + c * b)):.1f}" for b in range(1, xmax + 1, 3))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
        ceil = r["ceiling_tokens_per_s"]
        out.append(f'<line x1="{px(0):.1f}" y1="{py(ceil):.1f}" x2="{px(xmax):.1f}" y2="{py(ceil):.1f}" '
                   f'stroke="{color}" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{px(xmax) - 4:.1f}" y="{py(ceil) - 4:.1f}" text-anchor="end" fill="{color}">'
                   f'{gpu.name} ceiling 1/c = {ceil:.0f}</text>')
        x = r["max_throughput_tokens_per_s"]
        out.append(f'<line x1="{px(mb):.1f}" y1="{py(0):.1f}" x2="{px(mb):.1f}" y2="{py(x):.1f}" '
                   f'stroke="{color}" stroke-dasharray="2 2"/>')
        out.append(f'<circle cx="{px(mb):.1f}" cy="{py(x):.1f}" r="4" fill="{color}"/>')
        out.append(f'<text x="{px(mb) + 6:.1f}" y="{py(x) + 16:.1f}" fill="{color}">KV cap b={mb}</text>')
    a, c = story(H100_SXM)[:2]
    out.append(f'<circle cx="{px(a / c):.1f}" cy="{py(1 / (2 * c)):.1f}" r="4" fill="none" stroke="#333"/>')
    out.append(f'<text x="{px(a / c) + 6:.1f}" y="{py(1 / (2 * c)) + 4:.1f}">knee a/c = {a / c:.0f}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == knee_svg(), "regenerate the SVG: print(knee_svg())"


if __name__ == "__main__":
    print(knee_svg())
