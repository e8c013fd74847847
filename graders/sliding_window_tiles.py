"""Hidden grader of sliding-window-tiles: exact tile counts on seeded and adversarial triples.

Messages name the field that is wrong and the input, never the expected count (a counterexample,
a fresh small input, shows it).
"""

from __future__ import annotations

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_close, fail

KEYS = ("full", "partial", "skipped")


def _expect_counts(got, want: dict, what: str) -> None:
    Grading.show_result(want, got, name="tile counts")   # a counterexample's only: hidden cases record nothing
    if not isinstance(got, dict) or set(got) != set(KEYS):
        fail(f"{what}: expected a dict with exactly the keys {list(KEYS)}, got {type(got).__name__}"
             + (f" with keys {sorted(map(str, got))}" if isinstance(got, dict) else ""))
    for k in KEYS:
        v = got[k]
        if isinstance(v, bool) or not isinstance(v, int):
            fail(f"{what}: {k!r} must be an int, got {type(v).__name__}")
    if sum(got.values()) != sum(want.values()):
        fail(f"{what}: full + partial + skipped = {sum(got.values())}, which is not the number of tiles")
    wrong = [k for k in KEYS if got[k] != want[k]]
    if wrong:
        fail(f"{what}: wrong count of {' and '.join(repr(k) for k in wrong)} tiles "
             f"(got {', '.join(f'{k}={got[k]}' for k in wrong)})")


def _expect_int(got, want: int, what: str) -> None:
    Grading.show_result(want, got, name="attended pairs")
    if isinstance(got, bool) or not isinstance(got, int):
        fail(f"{what}: expected an int, got {type(got).__name__}")
    if got != want:
        fail(f"{what}: got {got}, which is not the number of allowed pairs")


def _triples(g: Grading) -> list[tuple[str, tuple]]:
    cases = [
        # the teaser's example and its neighbours
        ("32K-4K-128x128", (32768, 4096, 128, 128)),
        ("32K-4K-128x64", (32768, 4096, 128, 64)),
        ("32K-window-not-multiple-of-block", (32768, 4000, 128, 128)),
        ("32K-causal", (32768, None, 128, 128)),
        # edges of the window
        ("window-1-diagonal-only", (1000, 1, 64, 64)),
        ("window-1-rect", (1000, 1, 64, 16)),
        ("window-equals-N", (777, 777, 64, 32)),
        ("window-N-minus-1", (777, 776, 64, 32)),
        ("window-above-N", (300, 5000, 32, 32)),
        ("window-equals-block", (1024, 64, 64, 64)),
        ("window-block-plus-1", (1024, 65, 64, 64)),
        ("window-block-minus-1", (1024, 63, 64, 64)),
        # ragged blocks
        ("N-smaller-than-block", (5, 3, 16, 16)),
        ("N=1", (1, 1, 8, 8)),
        ("last-block-one-row", (129, 40, 64, 64)),
        ("last-block-one-row-causal", (129, None, 64, 64)),
        ("ragged-both", (1000, 300, 96, 80)),
        # rectangular tiles where the band crosses a tile between its corners
        ("band-between-corners", (4096, 8, 16, 128)),
        ("band-between-corners-2", (4096, 5, 128, 16)),
        ("blocks-1x1", (300, 7, 1, 1)),
        ("large-N", (1 << 21, 8192, 128, 64)),
    ]
    gen = g.rng(2101)
    for s in range(14):
        n = int(torch.randint(1, 200_000, (1,), generator=gen))
        bq = int(torch.tensor([16, 32, 64, 96, 128, 176, 256])[torch.randint(0, 7, (1,), generator=gen)])
        bk = int(torch.tensor([16, 32, 64, 80, 128, 176, 256])[torch.randint(0, 7, (1,), generator=gen)])
        w = None if s % 5 == 4 else int(torch.randint(1, max(2, n + 50), (1,), generator=gen))
        cases.append((f"random-{s}", (n, w, bq, bk)))
    return cases


def _ce_window(trial: Trial, n: int) -> int | None:
    """No window, 1, anywhere up to the sequence, at it, or past it (a window wider than the prompt is causal)."""
    return trial.rng.choice([None, 1, trial.rng.randint(1, n), n, n + 1, n + trial.rng.randint(2, 40)])


def counterexample(g: Grading, trial: Trial) -> None:
    """A small fresh input of a failed case's kind: a short sequence with tiny (often
    rectangular) tiles and a window at or near its edges, or a small speedup question."""
    kind = trial.pick({"tiles-": "tiles", "attended-pairs": "pairs", "speedup-": "speedup"}) or "tiles"
    rng, ref = trial.rng, g.reference()
    n = rng.randint(1, 12 * trial.size)
    w = _ce_window(trial, n)
    if kind == "pairs":
        g.show_input(seq_len=n, window=w)
        _expect_int(g.call("attended_pairs", n, w), ref.attended_pairs(n, w), f"attended_pairs(seq_len={n}, window={w})")
        return
    args = (n, w, rng.randint(1, 8), rng.randint(1, 8))
    if kind == "tiles":
        g.show_input(seq_len=n, window=w, block_q=args[2], block_k=args[3])
        _expect_counts(g.call("tile_counts", *args), ref.tile_counts(*args),
                       f"tile_counts(seq_len={n}, window={w}, block_q={args[2]}, block_k={args[3]})")
        return
    kw = {"partial_cost": rng.choice([1.0, 1.25, 1.5, 2.0, 3.0]), "q_block_cost": rng.choice([0.0, 0.5, 1.0, 2.0])}
    g.show_input(seq_len=n, window=w, block_q=args[2], block_k=args[3], **kw)
    expect_close(g.call("predicted_speedup", *args, **kw), ref.predicted_speedup(*args, **kw), rtol=1e-9,
                 name=f"predicted_speedup{args} {kw}")


def grade(g: Grading) -> None:
    ref = g.reference()
    for name, args in _triples(g):
        with g.case(f"tiles-{name}"):
            _expect_counts(g.call("tile_counts", *args), ref.tile_counts(*args),
                           f"tile_counts(seq_len={args[0]}, window={args[1]}, block_q={args[2]}, block_k={args[3]})")

    pair_args = [(1, 1), (1, None), (10, 3), (10, 10), (10, 11), (4097, 4096), (32768, 4096),
                 (32768, None), (100_003, 1), (100_003, 99_999)]
    with g.case("attended-pairs"):
        for n, w in pair_args:
            _expect_int(g.call("attended_pairs", n, w), ref.attended_pairs(n, w),
                        f"attended_pairs(seq_len={n}, window={w})")

    # a window wider than the prompt is causal: clamp it to N (W = N + 1 happens to agree unclamped)
    with g.case("attended-pairs-window-above-N"):
        for n, w in [(10, 12), (300, 5000), (1, 2), (32768, 40000), (4097, 1 << 20)]:
            _expect_int(g.call("attended_pairs", n, w), ref.attended_pairs(n, w),
                        f"attended_pairs(seq_len={n}, window={w})")

    speed = [
        ("32K-4K", (32768, 4096, 128, 128), {}),
        ("32K-4K-mask-cost", (32768, 4096, 128, 128), {"partial_cost": 2.0}),
        ("32K-4K-fixed-cost", (32768, 4096, 128, 64), {"partial_cost": 1.5, "q_block_cost": 3.0}),
        ("window-slower-than-causal", (10, 4, 4, 2), {"partial_cost": 2.0, "q_block_cost": 1.0}),
        ("causal-is-1", (5000, None, 64, 64), {"partial_cost": 3.0, "q_block_cost": 2.0}),
        ("window-above-N-is-1", (5000, 6000, 64, 128), {"partial_cost": 1.7}),
        ("ragged", (100_001, 1000, 176, 80), {"partial_cost": 1.25, "q_block_cost": 0.5}),
    ]
    for name, args, kw in speed:
        with g.case(f"speedup-{name}"):
            expect_close(g.call("predicted_speedup", *args, **kw), ref.predicted_speedup(*args, **kw),
                         rtol=1e-9, name=f"predicted_speedup{args} {kw}")

    bad = [
        ("seq_len-0", "tile_counts", (0, 4, 2, 2), {}),
        ("seq_len-negative", "attended_pairs", (-5, 4), {}),
        ("window-0", "tile_counts", (8, 0, 2, 2), {}),
        ("window-negative", "attended_pairs", (8, -1), {}),
        ("block_q-0", "tile_counts", (8, 4, 0, 2), {}),
        ("block_k-0", "predicted_speedup", (8, 4, 2, 0), {}),
        ("partial_cost-below-1", "predicted_speedup", (8, 4, 2, 2), {"partial_cost": 0.5}),
        ("q_block_cost-negative", "predicted_speedup", (8, 4, 2, 2), {"q_block_cost": -1.0}),
        ("partial_cost-nan", "predicted_speedup", (8, 4, 2, 2), {"partial_cost": float("nan")}),
        ("partial_cost-inf", "predicted_speedup", (8, 4, 2, 2), {"partial_cost": float("inf")}),
        ("q_block_cost-inf", "predicted_speedup", (8, 4, 2, 2), {"q_block_cost": float("inf")}),
        ("q_block_cost-nan", "predicted_speedup", (8, 4, 2, 2), {"q_block_cost": float("nan")}),
        ("seq_len-bool", "tile_counts", (True, 4, 2, 2), {}),
        ("seq_len-bool-pairs", "attended_pairs", (True, None), {}),
        ("seq_len-float", "attended_pairs", (8.0, 4), {}),
        ("window-bool", "attended_pairs", (8, True), {}),
        ("window-bool-tiles", "tile_counts", (8, True, 2, 2), {}),
        ("block_q-bool", "tile_counts", (8, 4, True, 2), {}),
        ("block_k-bool", "predicted_speedup", (8, 4, 2, True), {}),
    ]
    for name, fn, args, kw in bad:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args, **kw)
