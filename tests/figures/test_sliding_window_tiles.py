"""Every figure quoted by sliding-window-tiles' statement and editorial, from the reference."""

from pathlib import Path

import numpy as np
import pytest

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
R = load_module(ROOT / "reference" / "sliding_window_tiles.py", "_fig_sliding_window_tiles")


def brute(n, w, bq, bk):
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    m = j <= i
    if w is not None:
        m &= j > i - w
    out = {"full": 0, "partial": 0, "skipped": 0}
    for r in range(0, n, bq):
        for c in range(0, n, bk):
            t = m[r:r + bq, c:c + bk]
            out["full" if t.all() else "partial" if t.any() else "skipped"] += 1
    return out, int(m.sum())


def test_matches_brute_force_on_small_triples():
    rng = np.random.default_rng(0)
    for _ in range(1500):
        n = int(rng.integers(1, 60))
        w = None if rng.random() < 0.2 else int(rng.integers(1, 70))
        bq, bk = (int(x) for x in rng.integers(1, 18, 2))
        counts, pairs = brute(n, w, bq, bk)
        assert R.tile_counts(n, w, bq, bk) == counts, (n, w, bq, bk)
        assert R.attended_pairs(n, w) == pairs, (n, w)


def test_statement_examples():
    assert R.tile_counts(8, 4, 2, 2) == {"full": 3, "partial": 6, "skipped": 7}
    assert R.tile_counts(8, None, 2, 2) == {"full": 6, "partial": 4, "skipped": 6}
    assert R.tile_counts(10, 4, 4, 2) == {"full": 1, "partial": 8, "skipped": 6}
    assert R.attended_pairs(8, 4) == 26 and R.attended_pairs(8, None) == 36
    assert R.predicted_speedup(8, 4, 2, 2) == pytest.approx(10 / 9, rel=1e-12)


def test_editorial_4k_window_over_32k():
    n, w = 32768, 4096
    assert n // w == 8
    assert R.attended_pairs(n, None) == 536_887_296
    assert R.attended_pairs(n, w) == 125_831_168
    assert round(R.attended_pairs(n, None) / R.attended_pairs(n, w), 3) == 4.267
    assert R.tile_counts(n, None, 128, 128) == {"full": 32640, "partial": 256, "skipped": 32640}
    assert R.tile_counts(n, w, 128, 128) == {"full": 7440, "partial": 480, "skipped": 57616}
    assert R.predicted_speedup(n, w, 128, 128) == pytest.approx(32896 / 7920, rel=1e-12)
    assert round(R.predicted_speedup(n, w, 128, 128), 3) == 4.154
    # 128 x 64 tiles: both counts double, the ratio stays
    assert R.tile_counts(n, None, 128, 64) == {"full": 65280, "partial": 512, "skipped": 65280}
    assert R.tile_counts(n, w, 128, 64)["full"] + R.tile_counts(n, w, 128, 64)["partial"] == 15840
    assert R.predicted_speedup(n, w, 128, 64) == pytest.approx(65792 / 15840, rel=1e-12)
    # a window that is not a multiple of the tile
    assert R.tile_counts(n, 4000, 128, 128) == {"full": 7215, "partial": 705, "skipped": 57616}
    # costs
    assert round(R.predicted_speedup(n, w, 128, 128, partial_cost=2.0), 3) == 3.947
    assert round(R.predicted_speedup(n, w, 128, 128, q_block_cost=1.0), 3) == 4.055
    assert round(R.predicted_speedup(n, w, 128, 128, partial_cost=2.0, q_block_cost=1.0), 3) == 3.860
    # load imbalance: last query block of causal computes 256 tiles, the window at most 33
    assert R._row_block(n - 128, n - 1, n, None, 128)[0] == 256
    assert R._row_block(n - 128, n - 1, n, w, 128)[0] == 33


def test_window_can_lose():
    assert R.tile_counts(10, None, 4, 2) == {"full": 6, "partial": 5, "skipped": 4}
    assert R.predicted_speedup(10, 4, 4, 2, partial_cost=2.0, q_block_cost=1.0) == pytest.approx(0.95)


def test_band_between_corners_example():
    # B_q = 16, B_k = 128, W = 8: rows 16..31 x keys 0..127 has no allowed corner but (20, 18)
    counts, _ = brute(32, 8, 16, 128)
    assert R.tile_counts(32, 8, 16, 128) == counts
    assert counts["partial"] == 2
