"""The perf stage's statistics (grading.perf_stats): order statistics, the RSE stopping rule driven by a
fake clock, the roofline floor from specs, and the verdict's perf line. No real timing anywhere."""

import math
import statistics

import numpy as np
import pytest

from inferprep import specs
from inferprep.grading import perf_stats as ps
from inferprep.verdict import PerfResult


@pytest.mark.parametrize("xs", [[1.0, 2.0, 3.0, 4.0], [5.0], [3.0, 1.0, 2.0], [0.1, 0.4, 0.2, 0.9, 0.3, 0.35, 7.0]])
@pytest.mark.parametrize("q", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_quantile_matches_numpy_linear(xs, q):
    assert ps.quantile(xs, q) == pytest.approx(float(np.quantile(xs, q, method="linear")), abs=1e-15)


def test_median_iqr_mad_by_hand():
    assert ps.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert ps.iqr([1.0, 2.0, 3.0, 4.0]) == pytest.approx(3.25 - 1.75)
    # median 3; absolute deviations 2, 1, 0, 1, 97 -> 1: one outlier moves the MAD not at all
    assert ps.mad([1.0, 2.0, 3.0, 4.0, 100.0]) == 1.0


def test_quantile_rejects_bad_input():
    with pytest.raises(ValueError, match="empty"):
        ps.quantile([], 0.5)
    with pytest.raises(ValueError, match="q must be"):
        ps.quantile([1.0], 1.5)


def test_constants_are_what_they_say():
    assert ps.MAD_TO_SIGMA == pytest.approx(1 / statistics.NormalDist().inv_cdf(0.75), rel=1e-12)
    assert ps.MEDIAN_SE_FACTOR == pytest.approx(1.2533141373155, rel=1e-12)


def test_rse_of_median():
    xs = [9.0, 10.0, 11.0, 10.0, 12.0, 8.0]  # median 10, MAD 1
    want = math.sqrt(math.pi / 2) * ps.MAD_TO_SIGMA * 1.0 / math.sqrt(6) / 10.0
    assert ps.rse_of_median(xs) == pytest.approx(want, rel=1e-12)
    assert ps.rse_of_median([2.0, 2.0, 2.0]) == 0.0
    assert ps.rse_of_median([1.0]) == math.inf
    assert ps.rse_of_median([0.0, 0.0]) == math.inf


def test_rse_of_median_estimates_the_spread_of_medians():
    """On normal samples the estimate is within 15% of the medians' actual spread (seeded draws)."""
    rng = np.random.default_rng(0)
    n = 101
    medians = [float(np.median(rng.normal(1.0, 0.05, n))) for _ in range(2000)]
    actual = float(np.std(medians)) / 1.0
    estimates = [ps.rse_of_median(list(rng.normal(1.0, 0.05, n))) for _ in range(200)]
    assert float(np.mean(estimates)) == pytest.approx(actual, rel=0.15)


class FakeClock:
    """Advances by a scripted amount at each read (seconds)."""

    def __init__(self, steps):
        self.steps, self.now, self.reads = list(steps), 0.0, 0

    def __call__(self) -> float:
        self.now += self.steps[self.reads % len(self.steps)]
        self.reads += 1
        return self.now


def drive(rule: ps.StoppingRule, clock: FakeClock, a: list[float], b: list[float]):
    """The stage's loop in miniature: one sample of each series per repetition, timed on ``clock``."""
    sa, sb = [], []
    start = clock()
    i = 0
    while True:
        sa.append(a[i % len(a)])
        sb.append(b[i % len(b)])
        i += 1
        done, why = rule.stop(clock() - start, sa, sb)
        if done:
            return len(sa), why


def test_steady_series_stop_at_min_n():
    assert drive(ps.StoppingRule(min_n=5), FakeClock([0.01]), [1e-3], [2e-3]) == (5, "converged")


def test_noisy_series_stop_at_the_time_cap():
    # +-30% around 1 ms never reaches a 1% RSE in 20 repetitions; each repetition takes 1 s of the clock
    noisy = [0.7e-3, 1.3e-3, 1.0e-3, 0.8e-3, 1.2e-3]
    n, why = drive(ps.StoppingRule(cap_s=20.0, max_n=1000), FakeClock([1.0]), noisy, [1e-3])
    assert (n, why) == (20, "time cap")


def test_noisy_series_stop_at_max_n():
    noisy = [0.7e-3, 1.3e-3, 1.0e-3, 0.8e-3, 1.2e-3]
    assert drive(ps.StoppingRule(max_n=30, cap_s=1e9), FakeClock([1e-3]), noisy, noisy) == (30, "max_n")


def test_mild_noise_converges_once_rse_is_under_target():
    # 1.00, 1.01, 0.99 ms repeating: MAD 0.01 ms -> RSE = 1.2533 * 1.4826 * 0.01 / sqrt(n) / 1.0 < 0.01
    # first at n = 4 (0.00929); min_n = 5 keeps it going one more
    series = [1.00e-3, 1.01e-3, 0.99e-3]
    n, why = drive(ps.StoppingRule(min_n=5), FakeClock([0.01]), series, series)
    assert why == "converged" and n == 5
    assert ps.rse_of_median(series * 2) < 0.01


def test_stopping_rule_rejects_nonsense():
    with pytest.raises(ValueError, match="target_rse"):
        ps.StoppingRule(target_rse=0)
    with pytest.raises(ValueError, match="min_n"):
        ps.StoppingRule(min_n=1)
    with pytest.raises(ValueError, match="cap_s"):
        ps.StoppingRule(cap_s=0)


def test_roofline_floor_from_specs():
    h100 = specs.H100_SXM
    # one second of peak HBM bandwidth, or one second of the highest tensor peak (FP8 on Hopper)
    assert ps.roofline_floor_s(h100.hbm_bytes_per_s, 0, h100) == pytest.approx(1.0)
    assert ps.roofline_floor_s(0, h100.fp8_dense_flops, h100) == pytest.approx(1.0)
    a100 = specs.A100_SXM_80GB  # no FP8: the BF16 peak bounds it
    assert ps.roofline_floor_s(0, a100.bf16_dense_flops, a100) == pytest.approx(1.0)
    assert ps.roofline_floor_s(1e9, 1e9, None) is None
    with pytest.raises(ValueError):
        ps.roofline_floor_s(-1, 0, h100)


@pytest.mark.parametrize("name, gpu", [("NVIDIA H100 80GB HBM3", specs.H100_SXM), ("NVIDIA H200", specs.H200_SXM),
                                       ("NVIDIA A100-SXM4-80GB", specs.A100_SXM_80GB), ("NVIDIA B200", specs.B200),
                                       ("NVIDIA GeForce RTX 4090", None)])
def test_gpu_spec_by_device_name(name, gpu):
    assert ps.gpu_spec(name) is gpu


def test_perf_line():
    r = PerfResult(status="measured", ratio=0.5, median_s=1.2e-3, spread_s=3e-5, n=40, converged=True)
    assert r.line == "perf (cpu): 0.50x the reference's time (median 1.2 ms, IQR 0.03 ms, n=40); no roofline for cpu"
    assert r.rankable
    f = PerfResult(status="flagged", device_kind="NVIDIA H100 80GB HBM3", ratio=0.01, roofline_ratio=0.2, median_s=1e-6,
                   spread_s=0.0, n=5, converged=True, flagged=True, reason="under the floor")
    assert "0.20x the roofline floor" in f.line and "FLAGGED: under the floor" in f.line
    assert not f.rankable
    assert PerfResult(status="failed", message="a wrong output").line == "perf (cpu): failed: a wrong output"
