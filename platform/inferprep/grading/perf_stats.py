"""Statistics of the performance stage: pure functions of samples (seconds) and of an injected clock.

Nothing here reads a clock of its own: the stage (``runner.perf``) passes in the parent's clock, and
tests pass a fake one that advances by scripted amounts. All times are seconds.

- ``median``, ``iqr``, ``mad``: location and spread of a sample (linear interpolation between order
  statistics, numpy's default ``method="linear"``).
- ``rse_of_median``: the relative standard error of the median, estimated from the MAD: for a normal
  sample the median's standard error is sqrt(pi / 2) * sigma / sqrt(n) (asymptotically; Kenney and
  Keeping, *Mathematics of Statistics*, 1962, section 13.13) and sigma ~ 1.4826 * MAD (the MAD's
  consistency constant for the normal, 1 / Phi^-1(3/4)). The MAD keeps one preempted repetition
  from inflating the estimate, as a standard deviation would.
- ``StoppingRule``: repeat until both series' RSE is under ``target_rse`` (after ``min_n``), or
  ``max_n`` repetitions, or ``cap_s`` seconds of the clock.
- ``roofline_floor_s``: the least time a call can take on a device: max(bytes / peak bandwidth,
  FLOPs / peak FLOP/s), from ``inferprep.specs``; None for a device with no entry (CPUs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .. import specs

__all__ = ["median", "quantile", "iqr", "mad", "rse_of_median", "StoppingRule", "Summary", "summarize",
           "roofline_floor_s", "gpu_spec", "PerfWork", "perf_seed", "MAD_TO_SIGMA", "MEDIAN_SE_FACTOR"]

MAD_TO_SIGMA = 1.482602218505602
"""sigma of a normal sample per unit of its MAD: 1 / Phi^-1(3/4) (Phi^-1(3/4) = 0.6744897501960817)."""

MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)
"""The median's standard error per sigma / sqrt(n), for a normal sample, asymptotically (1.2533)."""


def quantile(xs: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0 <= q <= 1) of ``xs`` by linear interpolation between order statistics
    (numpy's ``method="linear"``). Raises ValueError for an empty sample or q outside [0, 1]."""
    if not xs:
        raise ValueError("quantile of an empty sample")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q!r}")
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(xs: Sequence[float]) -> float:
    return quantile(xs, 0.5)


def iqr(xs: Sequence[float]) -> float:
    """Interquartile range: the 0.75-quantile minus the 0.25-quantile."""
    return quantile(xs, 0.75) - quantile(xs, 0.25)


def mad(xs: Sequence[float]) -> float:
    """Median absolute deviation from the median (unscaled)."""
    m = median(xs)
    return median([abs(x - m) for x in xs])


def rse_of_median(xs: Sequence[float]) -> float:
    """Relative standard error of the median: MEDIAN_SE_FACTOR * MAD_TO_SIGMA * MAD / sqrt(n) / median.
    ``inf`` for fewer than two samples or a median <= 0 (nothing to stop on)."""
    if len(xs) < 2:
        return math.inf
    m = median(xs)
    if m <= 0:
        return math.inf
    return MEDIAN_SE_FACTOR * MAD_TO_SIGMA * mad(xs) / math.sqrt(len(xs)) / m


@dataclass(frozen=True)
class StoppingRule:
    """When the stage stops repeating. ``target_rse``: relative standard error of the median every
    timed series must reach (0.01 = 1%); ``min_n`` / ``max_n``: repetitions at least / at most;
    ``cap_s``: seconds of the stage's clock after which it stops whatever the RSE (the verdict then
    says it did not converge)."""

    target_rse: float = 0.01
    min_n: int = 5
    max_n: int = 200
    cap_s: float = 20.0

    def __post_init__(self):
        if not 0 < self.target_rse < 1:
            raise ValueError(f"target_rse must be in (0, 1), got {self.target_rse!r}")
        if not 2 <= self.min_n <= self.max_n:
            raise ValueError(f"need 2 <= min_n <= max_n, got min_n={self.min_n}, max_n={self.max_n}")
        if not self.cap_s > 0:
            raise ValueError(f"cap_s must be > 0, got {self.cap_s!r}")

    def converged(self, *series: Sequence[float]) -> bool:
        return all(len(s) >= self.min_n and rse_of_median(s) < self.target_rse for s in series)

    def stop(self, elapsed_s: float, *series: Sequence[float]) -> tuple[bool, str]:
        """(stop now?, why: "converged" | "max_n" | "time cap" | ""). ``elapsed_s``: the clock's
        seconds since the first repetition began."""
        if self.converged(*series):
            return True, "converged"
        if any(len(s) >= self.max_n for s in series):
            return True, "max_n"
        if elapsed_s >= self.cap_s and all(len(s) >= 2 for s in series):
            return True, "time cap"
        return False, ""


@dataclass(frozen=True)
class Summary:
    """One timed series: median and IQR (seconds), MAD (seconds), n, and the median's RSE."""

    median_s: float
    iqr_s: float
    mad_s: float
    n: int
    rse: float


def summarize(xs: Sequence[float]) -> Summary:
    return Summary(median(xs), iqr(xs), mad(xs), len(xs), rse_of_median(xs))


def gpu_spec(device_name: str) -> specs.GPU | None:
    """The ``specs.GPUS`` entry of a CUDA device name as torch reports it (``"NVIDIA H100 80GB
    HBM3"`` -> H100 SXM), or None. Matched on the model token (H100, H200, B200, A100); a PCIe or
    NVL part of the same model has a lower peak than the SXM one in the table, so the floor drawn
    from it stays a lower bound."""
    upper = device_name.upper()
    for token, gpu in (("H200", specs.H200_SXM), ("H100", specs.H100_SXM), ("B200", specs.B200),
                       ("A100", specs.A100_SXM_80GB)):
        if token in upper:
            return gpu
    return None


@dataclass(frozen=True)
class PerfWork:
    """What a grader's ``perf_case`` returns: the least work of the timed call. ``bytes_moved``:
    bytes read and written in device memory (each input read once, each output written once);
    ``flops``: floating-point operations (a multiply-add counts 2). The roofline floor is drawn
    from it."""

    bytes_moved: float = 0.0
    flops: float = 0.0


def perf_seed(rng) -> int:
    """A 62-bit int seed drawn from ``rng`` (the ``torch.Generator`` a grader's ``perf_case`` gets),
    for input helpers that take a seed (``g.rng(seed)``)."""
    import torch

    return int(torch.randint(0, 1 << 62, (1,), generator=rng))


def roofline_floor_s(bytes_moved: float, flops: float, gpu: specs.GPU | None) -> float | None:
    """The least seconds a call moving ``bytes_moved`` bytes of HBM and doing ``flops`` FLOPs can
    take on ``gpu``: max(bytes / hbm_bytes_per_s, flops / the highest tensor-core peak it has). The
    highest peak (FP8 where the GPU has it) bounds every dtype's FLOP rate, so the floor is a lower
    bound whatever precision the kernel uses. None for no GPU entry. Raises ValueError for
    negative work."""
    if bytes_moved < 0 or flops < 0:
        raise ValueError("bytes and FLOPs must be >= 0")
    if gpu is None:
        return None
    peak = max(gpu.bf16_dense_flops, gpu.fp8_dense_flops or 0.0)
    return max(bytes_moved / gpu.hbm_bytes_per_s, flops / peak)
