"""Every figure of the long-generation-batch statement and editorial, computed by the reference;
the editorial's picture (per-user speed and throughput vs batch, with the target and the pool
limits) is regenerated here and must match."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "long_generation_batch.py", "ref_long_generation_batch")
EDITORIAL = ROOT / "exercises" / "long-generation-batch" / "editorial.md"
S8B = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
P, O, BS = 512, 16384, 16
POOL = 25267


def rate(b):
    return 1 / ref.staggered_tpot(S8B, b, P, O)


def notes_tpot(b):
    """The notes' snapshot: request i at context prompt + floor(i*output/b) + 1 (just admitted)."""
    return S8B.step_s([(1, P + (i * O) // b, 1) for i in range(b)])


def test_pool_and_admission():
    assert ref.kv_pool_blocks(S8B, BS, 0.9, 4e9) == POOL
    assert POOL * BS == 404_272 and round(POOL * BS * S8B.kv_bytes_per_token / 1e9, 1) == 53.0
    assert S8B.kv_bytes_per_token == 131_072
    assert round(S8B.weight_bytes / 1e9, 1) == 15.0
    assert round((0.9 * specs.H100_SXM.hbm_bytes - S8B.weight_bytes - 4e9) / 1e9, 2) == 52.99
    assert ref.admission_limits(POOL, P, O, BS, 1024) == {"reserved": 23, "staggered": 45, "current": 789}
    assert ref.blocks(P + O, BS) == 1056 and ref.blocks(P, BS) == 32
    assert ref._staggered_need(45, P, O, BS) == 25014 and ref._staggered_need(46, P, O, BS) == 25558
    assert ref.overflow_step(POOL, 789, P, O, BS) == 1
    assert ref.overflow_step(POOL, 45, P, O, BS) == 8465
    assert ref.overflow_step(POOL, 23, P, O, BS) is None
    # the notes, tokens without blocks: 404,286 tokens; b = 23 / 46 / 789; 46 together overflow at 8,277
    tokens = int((0.9 * 80e9 - S8B.weight_bytes - 4e9) // 131072)
    assert tokens == 404_286
    assert (tokens // (P + O), int(tokens // (P + (O + 1) / 2)), tokens // P) == (23, 46, 789)
    assert -(-tokens // 46) - P == 8277


def test_preemption():
    rows = []
    for g in (1024, 8192, 16000):
        c = ref.preemption_cost(S8B, P, g, 25e9)
        rows.append((c["recompute_tokens"], round(c["recompute_s"], 3),
                     round(c["recompute_s"] / ref.staggered_tpot(S8B, 45, P, O), 1),
                     round(c["swap_bytes"] / 1e9, 2), round(1e3 * c["swap_s"], 1)))
    assert rows == [(1536, 0.047, 1.7, 0.20, 8.1), (8704, 0.288, 10.6, 1.14, 45.6),
                    (16512, 0.612, 22.5, 2.16, 86.6)]
    c = ref.preemption_cost(S8B, P, 8192, 25e9)
    assert round(c["recompute_s"], 4) == 0.2877
    # the notes' "2 / 11 / 23 decode steps" were at their b = 46 snapshot step
    assert [round(ref.preemption_cost(S8B, P, g, 25e9)["recompute_s"] / notes_tpot(46))
            for g in (1024, 8192, 16000)] == [2, 11, 23]


def test_user_speed():
    rows = [(b, round(1e3 * ref.staggered_tpot(S8B, b, P, O), 2), round(rate(b), 1),
             round(b * rate(b)), round(O / rate(b) / 60, 1)) for b in (1, 8, 16, 20, 23, 32, 45)]
    assert rows == [(1, 8.43, 118.7, 119, 2.3), (8, 11.41, 87.7, 701, 3.1),
                    (16, 14.81, 67.5, 1080, 4.0), (20, 16.52, 60.5, 1211, 4.5),
                    (23, 17.79, 56.2, 1293, 4.9), (32, 21.62, 46.2, 1480, 5.9),
                    (45, 27.16, 36.8, 1657, 7.4)]
    r = ref.batch_for_user_speed(S8B, POOL, P, O, BS, 60.0, 1024)
    assert (r["batch"], r["binding"], round(r["tokens_per_s_per_user"], 2),
            round(r["throughput_tokens_per_s"])) == (20, "speed", 60.55, 1211)
    assert round(rate(21), 1) == 59.0
    got = {t: (ref.batch_for_user_speed(S8B, POOL, P, O, BS, t, 1024)["batch"],
               ref.batch_for_user_speed(S8B, POOL, P, O, BS, t, 1024)["binding"])
           for t in (50.0, 40.0, 30.0, 120.0)}
    assert got == {50.0: (28, "speed"), 40.0: (39, "speed"), 30.0: (45, "kv_pool"), 120.0: (0, "speed")}
    assert round(100 * (1 - rate(45) / rate(20))) == 39
    assert round(100 * (45 * rate(45) / (20 * rate(20)) - 1)) == 37
    assert (P + 1, P + O) == (513, 16896)
    # the notes' snapshot: 131 / 59 / 37 tok/s at b = 1 / 23 / 46, and b = 22 for 60 tok/s
    assert [round(1 / notes_tpot(b)) for b in (1, 23, 46)] == [131, 59, 37]
    assert max(b for b in range(1, 47) if 1 / notes_tpot(b) >= 60) == 22
    assert round(46 / notes_tpot(46)) == 1718


# -- the picture ---------------------------------------------------------------------------

def speed_svg() -> str:
    """Per-user speed (left axis) and throughput (right axis) vs batch, S-8B, 512 + 16,384."""
    W, H, L, R, T, B = 560, 320, 50, 60, 20, 40
    bmax, smax, xmax = 50, 125.0, 2000.0

    def px(b):
        return L + b / bmax * (W - L - R)

    def py_speed(s):
        return T + (smax - s) / smax * (H - T - B)

    def py_thr(x):
        return T + (xmax - x) / xmax * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for b in range(0, bmax + 1, 10):
        out.append(f'<text x="{px(b):.1f}" y="{H - B + 14}" text-anchor="middle">{b}</text>')
    for s in range(0, 126, 25):
        out.append(f'<text x="{L - 4}" y="{py_speed(s) + 4:.1f}" text-anchor="end" fill="#1f77b4">{s}</text>')
    for x in range(0, 2001, 500):
        out.append(f'<text x="{W - R + 4}" y="{py_thr(x) + 4:.1f}" fill="#ff7f0e">{x}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">batch b (staggered)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" fill="#1f77b4" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">tokens/s per user</text>')
    out.append(f'<text x="{W - 8}" y="{(T + H - B) / 2:.0f}" text-anchor="middle" fill="#ff7f0e" '
               f'transform="rotate(90 {W - 8} {(T + H - B) / 2:.0f})">tokens/s, all users</text>')
    limits = ref.admission_limits(POOL, P, O, BS, 1024)
    for b, name in ((limits["reserved"], "reserve-max"), (limits["staggered"], "staggered pool")):
        out.append(f'<line x1="{px(b):.1f}" y1="{T}" x2="{px(b):.1f}" y2="{H - B}" stroke="#7f7f7f" stroke-dasharray="3,3"/>')
        out.append(f'<text x="{px(b) - 3:.1f}" y="{T + 12}" text-anchor="end" fill="#7f7f7f">{name} {b}</text>')
    y60 = py_speed(60.0)
    out.append(f'<line x1="{L}" y1="{y60:.1f}" x2="{W - R}" y2="{y60:.1f}" stroke="#d62728" stroke-dasharray="6,4"/>')
    out.append(f'<text x="{L + 4}" y="{y60 - 4:.1f}" fill="#d62728">target 60 tok/s per user</text>')
    bs = range(1, limits["staggered"] + 1)
    speed = " ".join(f"{px(b):.1f},{py_speed(rate(b)):.1f}" for b in bs)
    thr = " ".join(f"{px(b):.1f},{py_thr(b * rate(b)):.1f}" for b in bs)
    out.append(f'<polyline points="{speed}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    out.append(f'<polyline points="{thr}" fill="none" stroke="#ff7f0e" stroke-width="2"/>')
    r = ref.batch_for_user_speed(S8B, POOL, P, O, BS, 60.0, 1024)
    b = r["batch"]
    out.append(f'<circle cx="{px(b):.1f}" cy="{py_speed(r["tokens_per_s_per_user"]):.1f}" r="4" fill="#d62728"/>')
    out.append(f'<circle cx="{px(b):.1f}" cy="{py_thr(r["throughput_tokens_per_s"]):.1f}" r="4" fill="#d62728"/>')
    out.append(f'<text x="{px(b) + 6:.1f}" y="{py_thr(r["throughput_tokens_per_s"]) + 16:.1f}">'
               f'b = {b}: {r["tokens_per_s_per_user"]:.1f} tok/s each, {r["throughput_tokens_per_s"]:.0f} in all</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == speed_svg(), "regenerate the SVG: print(speed_svg())"


if __name__ == "__main__":
    print(speed_svg())
