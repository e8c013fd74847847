"""Every figure of the niah-vs-perplexity statement and editorial, computed from the grader's toy model
and the reference; the editorial's picture is regenerated here and must match."""

import math
from pathlib import Path

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "niah_vs_perplexity.py", "ref_niah_vs_perplexity")
toy = load_module(ROOT / "graders" / "niah_vs_perplexity.py", "grader_niah_vs_perplexity")
examples = load_module(ROOT / "exercises" / "niah-vs-perplexity" / "examples.py", "examples_niah_vs_perplexity")
EDITORIAL = ROOT / "exercises" / "niah-vs-perplexity" / "editorial.md"
F = toy.FACTORS
SUBSETS = [tuple(f for i, f in enumerate(F) if s >> i & 1) for s in range(8)]


def demo(benign=0.004, mode="rope_dropped", seed=40, **kw):
    """The statement's demo: 16K original context, YaRN x4, rope_scaling dropped, weights re-quantized."""
    return toy.ToyLongContextLM(seed=seed, mode=mode, original_context=16384, lengths=toy.lengths_around(16384),
                                depths=toy.D5, benign_weights=benign, ppl_inf=6.0, **kw)


def test_demo_is_a_valid_specimen_and_the_public_tables_match_it():
    rope_cells = {(32768, 0.0), (32768, 0.25), (65536, 0.0), (65536, 0.25), (65536, 0.5)}
    kv_cells = {(16384, 0.75), (32768, 0.75), (65536, 1.0)}
    for t, cause, cells, rope in [(demo(), "rope_scaling", rope_cells, True),
                                  (demo(mode="kv_tensor", seed=42, kv_fail_at_max=0.5), "kv_cache", kv_cells, False)]:
        assert toy.check_specimen(t)
        table = examples.TableModel(cause, cells, rope)
        for s in SUBSETS:
            for L in t.lengths:
                assert table.ppl_value(tuple(sorted(s)), L) == t.ppl_value(frozenset(s), L)
                for d in t.depths:
                    assert (not (cause in s and (L, d) in cells)) == t.niah_value(frozenset(s), L, d)


def test_statement_example():
    t = demo()
    p = lambda s, L: round(t.ppl_value(frozenset(s), L), 4)  # noqa: E731
    assert (p(F, 2048), p([], 2048)) == (7.3019, 7.2728)
    assert round(100 * (t.ppl_value(frozenset(F), 2048) / t.ppl_value(frozenset(), 2048) - 1), 1) == 0.4
    assert (p(F, 32768), p([], 32768)) == (8.2465, 6.3182)
    assert [p([f], 32768) for f in F] == [6.3435, 6.3182, 8.2137]
    got = ref.diagnose(t)
    assert got == {"cause": "rope_scaling",
                   "evidence": [["perplexity", [], 32768], ["perplexity", ["rope_scaling"], 32768]]}
    assert t.calls == {"perplexity": 13, "niah": 0}
    assert sorted(k for k, ok in t.grid(F).items() if not ok) == [
        (32768, 0.0), (32768, 0.25), (65536, 0.0), (65536, 0.25), (65536, 0.5)]
    assert t.budget == {"perplexity": 15, "niah": 33}
    assert 3 * 6 * 5 == 90 and 90 / 33 > 2.7


def test_questions_numbers():
    """DM-40: perplexity identical to two decimals, retrieval collapsing past 16K, a small factor grid."""
    t = demo(benign=0.0)
    for L in t.lengths:
        a, b = t.ppl_value(frozenset(F), L), t.ppl_value(frozenset(), L)
        assert (a == b) == (L <= 16384)
    acc = {L: sum(t.niah_value(frozenset(F), L, d) for d in t.depths) / 5 for L in t.lengths}
    assert acc == {2048: 1.0, 4096: 1.0, 8192: 1.0, 16384: 1.0, 32768: 0.6, 65536: 0.4}
    assert round(t.ppl_value(frozenset(F), 32768) / t.ppl_value(frozenset(), 32768), 2) == 1.3
    assert round(t.ppl_value(frozenset(F), 65536) / t.ppl_value(frozenset(), 65536), 2) == 1.6
    assert len(SUBSETS) == 8 and 1 + len(F) == 4


def test_rope_facts():
    t = demo()
    assert [i for i, _ in t.content] == [47, 48]
    base = [500000.0 ** (-2 * i / 128) for i in range(64)]
    interp = [i for i in range(64) if math.isclose(t.omega_ref[i], base[i] / 4, rel_tol=1e-12)]
    assert (interp[0], interp[-1], len(interp)) == (39, 63, 25)
    untouched = [i for i in range(64) if t.omega_ref[i] == base[i]]
    assert (untouched[0], untouched[-1]) == (0, 21)
    assert round(0.1 * math.log(4) + 1, 4) == 1.1386
    # the content pairs' angle: trained at 64K = dropped at 16K; dropped at 64K is 4x that
    assert [round(base[i] * 16384, 2) for i in (47, 48)] == [1.07, 0.87]
    assert [round(t.omega_ref[i] * 65536, 2) for i in (47, 48)] == [1.07, 0.87]
    assert [round(base[i] * 65536, 2) for i in (47, 48)] == [4.28, 3.49]


def test_kv_failure_probability():
    kv = demo(mode="kv_tensor", kv_fail_at_max=0.5)
    pf = {L: 1 - (1 - kv.kv_rate) ** L for L in kv.lengths}
    assert [round(100 * pf[L], 1) for L in kv.lengths] == [2.1, 4.2, 8.3, 15.9, 29.3, 50.0]
    assert round(1 / kv.kv_rate) == 94548


CURVES = [("reference", "reference", "#333333"), ("rope_scaling dropped", "rope_dropped", "#d62728"),
          ("rope_scaling factor 2 (not 4)", "rope_factor2", "#ff7f0e"),
          ("KV int4, one dynamic scale", "kv_tensor", "#1f77b4"), ("weight bug, retrieval head", "weights_head", "#2ca02c"),
          ("weight bug, all layers", "weights_all", "#9467bd")]


def curve(mode: str) -> tuple[list[float], list[float]]:
    """Mean NIAH accuracy over 5 depths x 64 haystack seeds, and perplexity ratio, per length (L0 = 16K)."""
    acc, ratio = [], []
    for L in toy.lengths_around(16384):
        n = ok = 0
        for seed in range(64):
            t = toy.ToyLongContextLM(seed=seed, mode="rope_dropped" if mode == "reference" else mode,
                                     original_context=16384, lengths=toy.lengths_around(16384), depths=toy.D5,
                                     kv_fail_at_max=0.5, weight_fail=0.25, weight_ppl=0.08)
            s = frozenset() if mode == "reference" else frozenset([t.cause])
            for d in toy.D5:
                n += 1
                ok += t.niah_value(s, L, d)
        acc.append(ok / n)
        ratio.append(t.ppl_value(s, L) / t.ppl_value(frozenset(), L))
    return acc, ratio


def picture_svg() -> str:
    W, H, T, B, GAP = 680, 300, 24, 44, 60
    lengths = toy.lengths_around(16384)
    panels = [(56, 300, 0.0, 1.0, "NIAH accuracy (5 depths x 64 haystacks)"),
              (56 + 300 + GAP, 680 - 16 - (56 + 300 + GAP), 1.0, 1.7, "perplexity / reference perplexity")]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="sans-serif" font-size="11">']

    def px(p, L):
        x0, w = p[0], p[1]
        return x0 + (math.log2(L / lengths[0])) / math.log2(lengths[-1] / lengths[0]) * w

    def py(p, v):
        return T + (p[3] - v) / (p[3] - p[2]) * (H - T - B)

    for p in panels:
        out.append(f'<rect x="{p[0]}" y="{T}" width="{p[1]}" height="{H - T - B}" fill="none" stroke="#999"/>')
        out.append(f'<text x="{p[0] + p[1] / 2:.0f}" y="{T - 8}" text-anchor="middle">{p[4]}</text>')
        for L in lengths:
            out.append(f'<text x="{px(p, L):.1f}" y="{H - B + 14}" text-anchor="middle">{L // 1024}K</text>')
        x16 = px(p, 16384)
        out.append(f'<line x1="{x16:.1f}" y1="{T}" x2="{x16:.1f}" y2="{H - B}" stroke="#bbb" stroke-dasharray="4 3"/>')
        for v in ([0.0, 0.5, 1.0] if p[3] == 1.0 else [1.0, 1.2, 1.4, 1.6]):
            out.append(f'<text x="{p[0] - 4}" y="{py(p, v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        out.append(f'<text x="{p[0] + p[1] / 2:.0f}" y="{H - 14}" text-anchor="middle">context length '
                   '(dashed: original context 16K)</text>')
    for i, (label, mode, color) in enumerate(CURVES):
        acc, ratio = curve(mode)
        for p, ys in ((panels[0], acc), (panels[1], ratio)):
            pts = " ".join(f"{px(p, L):.1f},{py(p, y):.1f}" for L, y in zip(lengths, ys))
            dash = ' stroke-dasharray="6 3"' if mode == "weights_all" else ""
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        lx, ly = panels[1][0] + 8, T + 14 + 14 * i
        out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 18}" y2="{ly - 4}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{lx + 22}" y="{ly}" fill="{color}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_curves():
    acc = {mode: curve(mode)[0] for _, mode, _ in CURVES}
    assert acc["reference"] == [1.0] * 6
    assert acc["rope_dropped"][:4] == [1.0] * 4 and acc["rope_dropped"][5] <= 0.4
    assert acc["rope_factor2"][:5] == [1.0] * 5 and acc["rope_factor2"][5] <= 0.6
    assert acc["kv_tensor"][0] > 0.9 and acc["kv_tensor"][5] < 0.6
    assert max(acc["weights_head"]) - min(acc["weights_head"]) < 0.15


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == picture_svg(), "regenerate the SVG: print(picture_svg())"


if __name__ == "__main__":
    for _, mode, _ in CURVES:
        print(mode, [round(x, 3) for x in curve(mode)[0]], [round(x, 3) for x in curve(mode)[1]])
    print(picture_svg())


def test_hidden_models_as_the_statement_and_editorial_describe_them():
    import random
    causes = [toy.ToyLongContextLM(seed=1, mode=s[0], original_context=s[1], lengths=toy.lengths_around(s[1]),
                                   depths=s[3], rope_theta=s[2]).cause for s in toy.SLOTS]
    assert len(toy.SLOTS) == 12
    assert (causes.count("rope_scaling"), causes.count("kv_cache"), causes.count("weights")) == (3, 5, 4)
    lengths = [L for s in toy.SLOTS for L in toy.lengths_around(s[1])]
    assert (min(lengths), max(lengths)) == (512, 131072)
    assert {s[4] for s in toy.SLOTS} == {0.01, 0.02}
    rng = random.Random(0)
    benign = {i: [s[6](rng).get("benign_weights", 0.0) for _ in range(200)] for i, s in enumerate(toy.SLOTS)}
    small = [b for i, bs in benign.items() if toy.SLOTS[i][4] == 0.01 and i != 6 for b in bs if b]
    assert 0.002 <= min(small) and max(small) <= 0.006                      # 0.2-0.6%
    assert 0.012 <= min(benign[2]) and max(benign[2]) <= 0.018               # 1.2-1.8% at tolerance 2%
    assert set(benign[6]) == {0.01} and toy.SLOTS[6][6](rng)["ppl_inf"] == 8.0
    assert 8.0 * (1 + 0.01) == (1 + 0.01) * 8.0 and not 8.0 * (1 + 0.01) > (1 + 0.01) * 8.0
    # the retrieval-head weight bug of the picture loses about a quarter of the haystacks
    acc = curve("weights_head")[0]
    assert 0.7 < sum(acc) / len(acc) < 0.8


def test_specimens_that_show_in_one_test_only_or_below_the_original_context():
    import random
    for salt in range(20):
        rng = random.Random(f"fig:{salt}")
        # the weight bug outside the retrieval head: perplexity up 2.5-6% everywhere, every needle found
        w = toy.make_specimen(11, rng)
        assert w.cause == "weights" and w.ppl_tol == 0.02 and all(w.grid(F).values())
        ratios = {w.ppl_value(frozenset(F), L) / w.ppl_value(frozenset(), L) for L in w.lengths}
        assert all(1.025 <= r <= 1.06 for r in ratios)
        # the KV model whose failures all sit below the original context
        k = toy.make_specimen(10, rng)
        bad = [c for c, ok in k.grid(F).items() if not ok]
        assert k.cause == "kv_cache" and bad and all(L < k.original_context for L, _ in bad)
        assert not any(k.regresses(("perplexity", tuple(sorted(F)), L)) for L in k.lengths)
        assert 0.002 <= k.benign_weights <= 0.006
        for t in (w, k):
            assert ref.diagnose(t)["cause"] == t.cause
