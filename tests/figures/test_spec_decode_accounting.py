"""Every figure of the spec-decode-accounting statement and editorial, computed by the
reference; the editorial's speedup-versus-batch picture is regenerated here and must match."""

import dataclasses
import math
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel
from inferprep.specs import ModelConfig

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "spec_decode_accounting.py", "ref_spec_decode_accounting")
EDITORIAL = ROOT / "exercises" / "spec-decode-accounting" / "editorial.md"

TARGET = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
EAGLE = dataclasses.replace(TARGET, model=dataclasses.replace(specs.LLAMA_3_1_70B, n_layers=1),
                            t_fixed_s=0.0002)
T8 = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.6, mbu=0.8, t_fixed_s=0.002)
LLAMA_3_2_1B = ModelConfig(name="Llama 3.2 1B", n_layers=16, hidden_size=2048, n_heads=32,
                           n_kv_heads=8, head_dim=64, ffn_size=8192, vocab_size=128256,
                           tied_embeddings=True)
D1 = StepModel(LLAMA_3_2_1B, specs.H100_SXM, 1, mfu=0.6, mbu=0.8, t_fixed_s=0.001)


def pool(sm: StepModel) -> int:
    n = sm.n_gpus
    return math.floor(n * (0.9 * sm.gpu.hbm_bytes - sm.weight_bytes / n - 4e9) / sm.kv_bytes_per_token)


POOL = pool(TARGET)
CONTEXTS = (512, 2048, 8192)


def speedup_svg() -> str:
    """Speculative over plain tokens/s against batch (log scale), S-spec + EAGLE, g = 4,
    alpha = 0.8; solid where the KV pool holds the batch, dotted beyond."""
    W, H, L, R, T, B = 560, 320, 50, 20, 20, 40
    bmax, ymax = 4096, 3.2

    def px(b):
        return L + math.log2(b) / math.log2(bmax) * (W - L - R)

    def py(s):
        return T + (ymax - s) / ymax * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for b in (1, 4, 16, 64, 256, 1024, 4096):
        out.append(f'<text x="{px(b):.1f}" y="{H - B + 14}" text-anchor="middle">{b}</text>')
    for s in (0.0, 1.0, 2.0, 3.0):
        out.append(f'<text x="{L - 4}" y="{py(s) + 4:.1f}" text-anchor="end">{s:.0f}</text>')
    out.append(f'<line x1="{L}" y1="{py(1.0):.1f}" x2="{W - R}" y2="{py(1.0):.1f}" stroke="#333" '
               'stroke-dasharray="4 3"/>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">'
               'batch (sequences)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">speedup over plain decoding</text>')
    colors = {512: "#1f77b4", 2048: "#2ca02c", 8192: "#d62728"}
    batches = sorted({round(2 ** (i / 8)) for i in range(0, 8 * 12 + 1)})
    for c in CONTEXTS:
        fit = ref.losing_batch(TARGET, EAGLE, c, 4, 0.8, POOL)["max_batch"]
        pts = [(b, ref.spec_step(TARGET, EAGLE, b, c, 4, 0.8)["speedup"]) for b in batches]
        inside = [p for p in pts if p[0] <= fit] + [(fit, ref.spec_step(TARGET, EAGLE, fit, c, 4, 0.8)["speedup"])]
        beyond = [inside[-1]] + [p for p in pts if p[0] > fit]
        for seg, dash in ((inside, ""), (beyond, ' stroke-dasharray="2 3"')):
            path = " ".join(f"{px(b):.1f},{py(s):.1f}" for b, s in seg)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colors[c]}" '
                       f'stroke-width="2"{dash}/>')
        b, s = inside[-1]
        out.append(f'<circle cx="{px(b):.1f}" cy="{py(s):.1f}" r="4" fill="{colors[c]}"/>')
        y = T + 16 + 16 * CONTEXTS.index(c)                    # legend, top right
        out.append(f'<line x1="{W - R - 190}" y1="{y - 4}" x2="{W - R - 170}" y2="{y - 4}" '
                   f'stroke="{colors[c]}" stroke-width="2"/>')
        out.append(f'<text x="{W - R - 164}" y="{y}">context {c}: KV pool holds {fit}</text>')
    lb = ref.losing_batch(TARGET, EAGLE, 512, 4, 0.8, POOL)["losing_batch"]
    out.append(f'<line x1="{px(lb):.1f}" y1="{py(1.0) - 30:.1f}" x2="{px(lb):.1f}" '
               f'y2="{py(1.0) + 30:.1f}" stroke="#1f77b4"/>')
    out.append(f'<text x="{px(lb) - 4:.1f}" y="{py(1.0) + 44:.1f}" text-anchor="end" '
               f'fill="#1f77b4">c = 512 loses from b = {lb}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == speedup_svg(), "regenerate the SVG: print(speedup_svg())"


def test_budget():
    r = ref.schedule_running(8192, [4] * 1024)
    assert (r["tokens_used"], r["budget_left"]) == (5120, 3072) and 8192 // 5 == 1638
    assert ref.schedule_running(8192, [0] * 1024)["budget_left"] == 7168
    r = ref.schedule_running(12, [4, 4, 4])
    assert r == {"scheduled_tokens": [5, 5, 2], "scheduled_drafts": [4, 4, 1],
                 "tokens_used": 12, "budget_left": 0}
    assert ref.schedule_running(16384, [3] * 2048)["budget_left"] == 8192
    assert ref.schedule_running(16384, [4] * 4096)["scheduled_tokens"][3276:3278] == [4, 0]


def test_rollback():
    (s,) = ref.rollback_trace(1000, 63, 16, 0, 327680, [(4, 1)])
    assert s == {"num_computed_tokens": 1002, "tokens_emitted": 2, "num_rejected": 3,
                 "blocks_held": 63, "stale_slots": 3, "wasted_kv_bytes": 983040.0}
    assert TARGET.kv_bytes_per_token == 327680
    assert ref.rollback_trace(1000, 63, 16, 4, 327680, [(4, 1)])[0]["blocks_held"] == 64
    t = ref.rollback_trace(40, 3, 16, 0, 512, [(8, 0), (2, 2), (1, 0), (8, 8)])
    assert [x["num_computed_tokens"] for x in t] == [41, 44, 45, 54]
    assert [x["stale_slots"] for x in t] == [8, 5, 4, 0]
    assert [x["blocks_held"] for x in t] == [4, 4, 4, 4]


def test_step_times():
    assert POOL == 1_235_951 and pool(T8) == 404_286
    s = ref.spec_step(TARGET, EAGLE, 64, 512, 4, 0.8)
    assert (round(1e3 * s["plain_s"], 3), round(1e3 * s["verify_s"], 3), round(1e3 * s["draft_s"], 3),
            round(s["speedup"], 2)) == (9.985, 12.872, 1.536, 2.33)
    assert (s["plain_gemm_bound"], s["verify_gemm_bound"]) == ("memory", "compute")
    s1 = ref.spec_step(TARGET, EAGLE, 1, 512, 4, 0.8)
    assert (round(1e3 * s1["plain_s"], 3), round(1e3 * s1["draft_s"], 3), round(s1["speedup"], 2)) \
        == (9.491, 1.512, 2.90)
    e1 = ref.spec_step(TARGET, EAGLE, 1, 1024, 1, 0.8)
    assert round(100 * e1["draft_s"] / e1["plain_s"], 1) == 4.0
    d1 = ref.spec_step(T8, D1, 1, 1024, 1, 0.8)
    assert round(100 * d1["draft_s"] / d1["plain_s"]) == 25
    # verification turns the GEMMs compute-bound from b = 45 at g = 4, plain decode from b = 222
    first = [next(b for b in range(1, 400)
                  if ref.spec_step(TARGET, EAGLE, b, 512, g, 0.8)["verify_gemm_bound"] == "compute")
             for g in (0, 4)]
    assert first == [222, 45]
    peak = max((ref.spec_step(TARGET, EAGLE, b, 512, 4, 0.8)["speedup"], b) for b in range(1, 300))
    assert (round(peak[0], 2), peak[1]) == (2.91, 44)
    s214 = ref.spec_step(TARGET, EAGLE, 214, 512, 4, 0.8)
    assert (round(1e3 * s214["plain_s"], 2), round(1e3 * s214["spec_s"], 2), round(s214["speedup"], 4)) \
        == (11.16, 37.60, 0.9977)
    assert (round(1e3 * s214["verify_s"], 2), round(1e3 * s214["draft_s"], 2)) == (36.01, 1.60)
    assert round(1e3 * s1["verify_s"], 3) == 9.491
    # long context: attention (memory-bound, shared by plain and verify) dominates
    s8k = ref.spec_step(TARGET, EAGLE, 150, 8192, 4, 0.8)
    assert (round(1e3 * s8k["plain_s"], 1), round(1e3 * s8k["spec_s"], 1), round(s8k["speedup"], 2)) \
        == (28.3, 46.2, 2.06)
    assert round(1e3 * 150 * TARGET.attention_s(1, 8192), 1) == 18.8
    assert round(1e3 * 150 * TARGET.attention_s(5, 8192), 1) == 18.8
    assert round(1e3 * TARGET.weight_bytes / TARGET.bytes_per_s, 2) == 6.48
    s2k = ref.spec_step(TARGET, EAGLE, 602, 2048, 4, 0.8)
    assert round(s2k["speedup"], 2) == 1.17 and s2k["plain_gemm_bound"] == "compute"


def test_losing_batches():
    got = {(c, g): ref.losing_batch(TARGET, EAGLE, c, g, 0.8, POOL) for c in CONTEXTS for g in (1, 2, 4, 6)}
    assert {k: v["losing_batch"] for k, v in got.items() if k[0] == 512} == \
        {(512, 1): None, (512, 2): 566, (512, 4): 214, (512, 6): 177}
    assert all(v["losing_batch"] is None for k, v in got.items() if k[0] > 512)
    assert [got[(512, g)]["max_batch"] for g in (1, 4)] == [2404, 2390]
    assert [got[(2048, g)]["max_batch"] for g in (4, 6)] == [602, 601]
    assert got[(8192, 4)]["max_batch"] == 150
    unbounded = 10**9
    assert ref.losing_batch(TARGET, EAGLE, 512, 1, 0.8, unbounded)["losing_batch"] == 4422
    assert ref.losing_batch(TARGET, EAGLE, 2048, 6, 0.8, unbounded)["losing_batch"] == 1886
    assert ref.losing_batch(TARGET, EAGLE, 2048, 4, 0.8, unbounded)["losing_batch"] is None
    assert ref.losing_batch(TARGET, EAGLE, 8192, 6, 0.8, unbounded)["losing_batch"] is None
    assert ref.losing_batch(TARGET, EAGLE, 512, 4, 0.6, POOL)["losing_batch"] == 128
    assert ref.losing_batch(T8, D1, 512, 4, 0.8, pool(T8))["losing_batch"] == 172
    assert ref.losing_batch(T8, D1, 2048, 4, 0.8, pool(T8))["losing_batch"] is None


def test_losing_is_not_monotone():
    peak = dataclasses.replace(TARGET, mfu=1.0, mbu=1.0, t_fixed_s=0.0)
    head = dataclasses.replace(EAGLE, mfu=1.0, mbu=1.0)
    loses = [ref.spec_step(peak, head, b, 2048, 4, 0.7)["speedup"] < 1 for b in range(1, 603)]
    assert [b for b in range(1, 603) if loses[b - 1]] == list(range(292, 384))
    assert ref.losing_batch(peak, head, 2048, 4, 0.7, POOL) == {"max_batch": 602, "losing_batch": 292}


if __name__ == "__main__":
    print(speedup_svg())
