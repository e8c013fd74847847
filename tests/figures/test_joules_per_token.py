"""Every figure quoted by joules-per-token's statement and editorial, from the reference."""

from pathlib import Path

from inferprep.grading import load_module
from inferprep.specs import H100_SXM, LLAMA_3_1_8B as M, DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "joules_per_token.py", "_fig_joules_per_token")

D = M.hidden_size
PARAMS = M.n_layers * (2 * D * M.n_heads * M.head_dim + 2 * D * M.n_kv_heads * M.head_dim
                       + 3 * D * M.ffn_size) + D * M.vocab_size
KV = 2 * M.n_layers * M.n_kv_heads * M.head_dim * 2
CTX = 1024
FLOPS = 2 * PARAMS + 4 * M.n_layers * M.n_heads * M.head_dim * CTX
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128]


def curve():
    return ref.energy_curve(H100_SXM, DType.BF16, 2 * PARAMS, KV, CTX, FLOPS, BATCHES, 350.0, 0.0)


def test_inputs():
    assert round(2 * PARAMS / 1e9, 1) == 15.0 and KV == 131072 and round(FLOPS / 1e9, 1) == 15.5
    assert 350.0 == H100_SXM.tdp_w / 2


def test_table():
    r = curve()
    rows = {1: (221, 351, 1.588), 8: (1666, 359, 0.216), 32: (5553, 381, 0.069), 128: (13321, 423, 0.032)}
    for b, (x, p, j) in rows.items():
        i = BATCHES.index(b)
        assert round(r["tokens_per_s"][i]) == x
        assert round(r["power_w"][i]) == p
        assert round(r["joules_per_token"][i], 3) == j


def test_spreads():
    r = curve()
    assert round(r["power_spread"], 2) == 1.21
    assert round(r["throughput_spread"]) == 60
    assert round(r["joules_spread"]) == 50
    assert r["moved_by"] == "throughput"
    assert max(r["power_w"]) < H100_SXM.tdp_w


def test_batch_128_memory_bound():
    r = curve()
    t_cmp = 128 * FLOPS / H100_SXM.dense_flops(DType.BF16)
    assert round(t_cmp * 1e3, 2) == 2.01
    assert round(r["step_time_s"][-1] * 1e3, 1) == 9.6


def test_power_spread_is_the_models():
    # the 1.21x follows from the assumed 350 W floor; a floor at 0 W or at the TDP moves it
    r0 = ref.energy_curve(H100_SXM, DType.BF16, 2 * PARAMS, KV, CTX, FLOPS, BATCHES, 1e-9, 0.0)
    r700 = ref.energy_curve(H100_SXM, DType.BF16, 2 * PARAMS, KV, CTX, FLOPS, BATCHES, 700.0, 0.0)
    assert r0["power_spread"] > 10 and r700["power_spread"] == 1.0
    assert round(curve()["throughput_spread"] / 2) == 30          # even a 2x power swing moves 30x less


def test_gb_not_gib():
    assert H100_SXM.hbm_bytes == 80e9 and round(80 * 2**30 / 1e9, 1) == 85.9 and round(80e9 / 2**30, 1) == 74.5
    assert round((70e9 + 20 * 4096 * 131072) / 1e9, 1) == 80.7
    assert round((70e9 + 10 * 4096 * 131072) / 1e9, 1) == 75.4
    ref.energy_curve(H100_SXM, DType.BF16, 70e9, 131072, 4096, 15.1e9, [1, 10], 350.0, 0.0)
    import pytest
    with pytest.raises(ValueError):
        ref.energy_curve(H100_SXM, DType.BF16, 70e9, 131072, 4096, 15.1e9, [1, 20], 350.0, 0.0)


def test_group():
    assert ref.joules_per_token(700.0, 14000.0, 8) == 0.4
    assert 8 * 700 == 5600


EDITORIAL = ROOT / "exercises" / "joules-per-token" / "editorial.md"


def energy_svg() -> str:
    """Throughput, power and joules per token relative to batch 1, log-log, from the reference."""
    import math

    W, H, L, R, T, B = 560, 300, 60, 20, 20, 40
    xmin, xmax, ymin, ymax = 0.0, math.log2(128), -2.0, 2.0          # log2 batch, log10 ratio

    def px(b):
        return L + (math.log2(b) - xmin) / (xmax - xmin) * (W - L - R)

    def py(v):
        return T + (ymax - math.log10(v)) / (ymax - ymin) * (H - T - B)

    r = curve()
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for b in BATCHES:
        out.append(f'<text x="{px(b):.1f}" y="{H - B + 14}" text-anchor="middle">{b}</text>')
    for e, lab in ((-2, "1/100"), (-1, "1/10"), (0, "1"), (1, "10"), (2, "100")):
        out.append(f'<text x="{L - 4}" y="{py(10 ** e) + 4:.1f}" text-anchor="end">{lab}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">decode batch</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">relative to batch 1</text>')
    series = (("tokens_per_s", "#1f77b4", "tokens/s"), ("power_w", "#ff7f0e", "power (W)"),
              ("joules_per_token", "#2ca02c", "J/token"))
    for key, color, label in series:
        vals = [v / r[key][0] for v in r[key]]
        pts = " ".join(f"{px(b):.1f},{py(v):.1f}" for b, v in zip(BATCHES, vals))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
        for b, v in zip(BATCHES, vals):
            out.append(f'<circle cx="{px(b):.1f}" cy="{py(v):.1f}" r="3" fill="{color}"/>')
        end = vals[-1]
        text = f"{label} x{end:.2f}" if end < 10 and end >= 1 else (f"{label} x{end:.0f}" if end >= 10 else f"{label} /{1 / end:.0f}")
        out.append(f'<text x="{px(BATCHES[-1]) - 6:.1f}" y="{py(end) + (14 if end < 1 else -8):.1f}" '
                   f'text-anchor="end" fill="{color}">{text}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == energy_svg(), "regenerate the SVG: print(energy_svg())"


if __name__ == "__main__":
    print(energy_svg())
