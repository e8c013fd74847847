"""Every figure of the priority-kv-budget statement and editorial, computed by the reference;
the editorial's picture (TPOT against the batch class's KV) is regenerated here and must match."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "priority_kv_budget.py", "ref_priority_kv_budget")
EDITORIAL = ROOT / "exercises" / "priority-kv-budget" / "editorial.md"
S_SPEC = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
INTER = [4096] * 64
MIXED = [8192] * 40 + [32768] * 10 + [2048] * 60


def pool_tokens(sm: StepModel) -> int:
    """The editorial's pool: 90% of HBM, less each GPU's share of the streamed weights and 4 GB."""
    return int(sm.n_gpus * (0.9 * sm.gpu.hbm_bytes - sm.weight_bytes / sm.n_gpus - 4e9)
               / sm.kv_bytes_per_token)


POOL = pool_tokens(S_SPEC)


def tpot_svg() -> str:
    """TPOT of the 64 interactive sequences against the batch class's KV tokens, three contexts."""
    W, H, L, R, T, B = 560, 300, 56, 20, 20, 44
    xmax, ymin, ymax = 1.0e6, 10.0, 30.0

    def px(x):
        return L + x / xmax * (W - L - R)

    def py(ms):
        return T + (ymax - ms) / (ymax - ymin) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for k in range(0, 11, 2):
        x = px(k * 1e5)
        out.append(f'<text x="{x:.1f}" y="{H - B + 14}" text-anchor="middle">{k * 100}K</text>')
    for ms in (10, 15, 20, 25, 30):
        out.append(f'<text x="{L - 4}" y="{py(ms) + 4:.1f}" text-anchor="end">{ms}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 10}" text-anchor="middle">'
               'KV tokens held by the batch class</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">interactive TPOT (ms)</text>')
    out.append(f'<line x1="{L}" y1="{py(20):.1f}" x2="{W - R}" y2="{py(20):.1f}" stroke="#555" '
               'stroke-dasharray="4 3"/>')
    out.append(f'<text x="{W - R - 4}" y="{py(20) - 4:.1f}" text-anchor="end" fill="#555">target 20 ms</text>')
    style = {32768: 'stroke-width="4" stroke-opacity="0.5"', 8192: 'stroke-width="1.5" stroke-dasharray="6 3"',
             2048: 'stroke-width="1.5"'}
    for c, color in ((32768, "#2ca02c"), (8192, "#1f77b4"), (2048, "#d62728")):
        pts = []
        n = 0
        while n * (c + 1) <= xmax:
            ms = 1e3 * ref._decode_step_s(S_SPEC, INTER, n, c)
            if ms > ymax:
                break
            pts.append(f"{px(n * (c + 1)):.1f},{py(ms):.1f}")
            n += 1
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{color}" {style[c]}/>')
        b = ref.batch_kv_budget(S_SPEC, 0.020, INTER, c, POOL)
        x, y = px(b["kv_tokens"]), py(1e3 * b["tpot_at_budget_s"])
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}"/>')
        dy = {2048: -26, 8192: 30, 32768: 44}[c]
        out.append(f'<text x="{x:.1f}" y="{y + dy:.1f}" text-anchor="middle" fill="{color}">'
                   f'{c // 1024}K ctx: {b["max_batch_seqs"]} seqs, {b["kv_tokens"] / 1e3:.0f}K</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == tpot_svg(), "regenerate the SVG: print(tpot_svg())"


def test_cost_per_token():
    k = ref.kv_cost_per_token_s(S_SPEC)
    assert S_SPEC.kv_bytes_per_token == 327_680 and S_SPEC.bytes_per_s == pytest.approx(21.44e12, rel=1e-12)
    assert k == pytest.approx(1.528358208955224e-08, rel=1e-12)
    assert round(k * 1e6 * 1e3, 2) == 15.28 and round(k * 2**20 * 1e3, 2) == 16.03
    sm8 = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
    assert round(ref.kv_cost_per_token_s(sm8) * 1e5 * 1e3, 2) == 4.89
    assert round(S_SPEC.gemm_knee_tokens(), 1) == 224.9
    assert round(S_SPEC.flops_per_s / S_SPEC.bytes_per_s) == 222
    assert S_SPEC.attn_flops_per_key / S_SPEC.kv_bytes_per_token == 8
    assert round(600_000 * k * 1e3, 1) == 9.2
    b = S_SPEC.breakdown([(1, 4096, 1)] * 64)
    assert (round(b["gemm_s"] * 1e3, 2), round(b["attention_s"] * 1e3, 2)) == (6.48, 4.01)


def test_pool():
    assert POOL == 1_235_951 and round(POOL * 327_680 / 1e9) == 405


def test_budgets():
    got = {}
    for t in (0.020, 0.025, 0.030):
        for c in (2048, 8192, 32768):
            r = ref.batch_kv_budget(S_SPEC, t, INTER, c, POOL)
            got[(round(t * 1e3), c)] = (r["max_batch_seqs"], r["kv_tokens"], r["binding"])
    assert got == {
        (20, 2048): (183, 374_967, "tpot"), (20, 8192): (51, 417_843, "tpot"),
        (20, 32768): (12, 393_228, "tpot"),
        (25, 2048): (266, 545_034, "tpot"), (25, 8192): (91, 745_563, "tpot"),
        (25, 32768): (22, 720_918, "tpot"),
        (30, 2048): (348, 713_052, "tpot"), (30, 8192): (118, 966_774, "pool"),
        (30, 32768): (29, 950_301, "pool"),
    }
    r = ref.batch_kv_budget(S_SPEC, 0.020, INTER, 8192, POOL)
    assert round(r["base_tpot_s"] * 1e3, 2) == 13.49 and round(r["tpot_at_budget_s"] * 1e3, 2) == 19.88
    assert round(r["kv_bytes"] / 1e9, 1) == 136.9
    assert r["kv_bytes"] == 136_918_794_240.0
    assert round(ref.batch_kv_budget(S_SPEC, 0.020, INTER, 2048, POOL)["kv_bytes"] / 1e9, 1) == 122.9
    assert round(ref.batch_kv_budget(S_SPEC, 0.020, INTER, 32768, POOL)["kv_bytes"] / 1e9, 1) == 128.9
    assert ref.batch_kv_budget(S_SPEC, 0.040, INTER, 8192, POOL)["max_batch_seqs"] == 118
    # the closed form, and the KV-only line at 2K that ignores the GEMM knee
    k = ref.kv_cost_per_token_s(S_SPEC)
    assert round((0.020 - r["base_tpot_s"]) / k, -3) == 426_000
    assert int((0.020 - r["base_tpot_s"]) / (2049 * k)) == 207
    assert 64 + 183 > S_SPEC.gemm_knee_tokens() > 64 + 51


def test_admission_and_guard():
    running = [(8000, 100, 192)] * 50
    assert ref.admit_batch_request(417_792, running, 8000, 192) is True
    assert ref.admit_batch_request(417_791, running, 8000, 192) is False
    r = ref.tpot_guard(S_SPEC, 0.020, INTER, MIXED, 600_000)
    assert round(r["tpot_before_s"] * 1e3, 2) == 25.39 and r["engine_preempted"] == []
    assert r["policy_preempted"] == list(range(36, 50))
    assert round(r["tpot_after_policy_s"] * 1e3, 2) == 19.88 and r["meets_target"]
    r = ref.tpot_guard(S_SPEC, 0.030, INTER, MIXED, 150)
    assert r["engine_preempted"] == [109] and r["policy_preempted"] == [49]
    assert round(r["tpot_after_engine_s"] * 1e3, 2) == 25.36
    assert round(r["tpot_after_policy_s"] * 1e3, 2) == 24.89


if __name__ == "__main__":
    print(tpot_svg())
