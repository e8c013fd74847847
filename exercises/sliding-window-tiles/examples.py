"""Public cases: the worked examples of the statement."""

from inferprep.grading import Grading, expect_close, expect_equal


def grade(g: Grading) -> None:
    with g.case("N=8 W=4 B=2"):
        expect_equal(g.call("tile_counts", 8, 4, 2, 2), {"full": 3, "partial": 6, "skipped": 7})
    with g.case("N=8 causal B=2"):
        expect_equal(g.call("tile_counts", 8, None, 2, 2), {"full": 6, "partial": 4, "skipped": 6})
    with g.case("ragged N=10 W=4 Bq=4 Bk=2"):
        expect_equal(g.call("tile_counts", 10, 4, 4, 2), {"full": 1, "partial": 8, "skipped": 6})
    with g.case("attended pairs"):
        expect_equal(g.call("attended_pairs", 8, 4), 26)
        expect_equal(g.call("attended_pairs", 8, None), 36)
    with g.case("speedup N=8 W=4"):
        expect_close(g.call("predicted_speedup", 8, 4, 2, 2), 10 / 9, rtol=1e-9)
    with g.case("4K window over 32K, 128x128 tiles"):
        expect_equal(g.call("tile_counts", 32768, 4096, 128, 128), {"full": 7440, "partial": 480, "skipped": 57616})
        expect_close(g.call("predicted_speedup", 32768, 4096, 128, 128), 32896 / 7920, rtol=1e-9)
    with g.case("rejects window 0"):
        g.raises("ValueError", "tile_counts", 8, 0, 2, 2)
