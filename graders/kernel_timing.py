"""Hidden grader of kernel-timing.

The device is simulated here, in the trusted parent (``inferprep.sim.kernel_clock``): the
submission gets three proxies (``kernel``, ``flush``, ``timer``) onto one ``SimulatedDevice``
whose log says what really ran, for how long, and with which cache state. The reported times
must be the device times of cold, warmed-up launches; the statistics must be the median and IQR
of those times. A kernel launched onto an idle stream starts only when its launch call returns,
so an interval whose start event the device reached while idle holds the launch latency too.
Input checks (the ValueError cases) run after every core case.
"""

from __future__ import annotations

import dataclasses
import math

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_close, expect_equal, fail
from inferprep.sim.kernel_clock import Handle, SimulatedDevice
from inferprep.specs import A100_SXM_80GB, B200, H100_SXM, H200_SXM, DType

KEYS = ("times", "median", "iqr", "min")


def _q(xs, q):
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _host(g: Grading, dev: SimulatedDevice):
    kernel = g.host(Handle(dev.kernel), ["__call__"])
    flush = g.host(Handle(dev.flush), ["__call__"])
    timer = g.host(dev, ["record", "synchronize", "elapsed"])
    return kernel, flush, timer


def _check_run(got, dev: SimulatedDevice, warmup: int, reps: int) -> None:
    if not isinstance(got, dict) or set(got) != set(KEYS):
        fail(f"expected a dict with exactly the keys {list(KEYS)}, got "
             + (f"keys {sorted(map(str, got))}" if isinstance(got, dict) else type(got).__name__))
    times = got["times"]
    if not isinstance(times, (list, tuple)) or len(times) != reps:
        fail(f"'times' must be a list of {reps} floats (one per repetition), got "
             + (f"{len(times)} values" if isinstance(times, (list, tuple)) else type(times).__name__))
    for i, t in enumerate(times):
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            fail(f"times[{i}] is not a finite number")
    ks = dev.kernels()
    if len(ks) != warmup + reps:
        fail(f"the kernel ran {len(ks)} times; expected warmup + reps = {warmup} + {reps}")
    timed = ks[warmup:]
    for i, k in enumerate(timed):
        if not k.cold:
            fail(f"repetition {i} ran with a warm L2 cache: nothing flushed it since the previous launch")
    for i, (t, k) in enumerate(zip(times, timed)):
        if abs(t - k.duration) > 1e-12 + 1e-9 * k.duration:
            fail(f"times[{i}] is {t / k.duration:.3g}x the kernel's device time for that repetition "
                 "(the interval must hold exactly one launch of the kernel, timed on the device)")
    true = [k.duration for k in timed]
    expect_close(got["median"], _q(true, 0.5), rtol=1e-9, atol=1e-15, name="median")
    expect_close(got["iqr"], _q(true, 0.75) - _q(true, 0.25), rtol=1e-9, atol=1e-15, name="iqr")
    expect_close(got["min"], min(true), rtol=1e-9, atol=1e-15, name="min")


RUNS = [
    # name, device parameters, warmup, reps
    ("default-odd-reps", dict(seed=11), 3, 21),
    ("even-reps", dict(seed=12), 2, 20),
    ("one-rep", dict(seed=13, startup_launches=1), 1, 1),
    ("two-reps", dict(seed=14), 4, 2),
    ("no-startup-cost-no-warmup", dict(seed=15, startup_launches=0), 0, 9),
    ("many-outliers", dict(seed=16, outlier_rate=0.45), 3, 30),
    ("long-startup", dict(seed=17, startup_launches=5, startup_s=0.2), 5, 15),
    ("tiny-kernel-below-launch-overhead", dict(seed=18, base_s=2e-6, flush_s=30e-6), 2, 12),
    ("slow-kernel", dict(seed=19, base_s=4e-3, flush_s=50e-6), 2, 10),
    ("strong-cache-effect", dict(seed=20, warm_factor=0.2), 2, 16),
]

PLAUSIBILITY = [
    # name, seconds, bytes, flops, gpu, dtype
    # A 1.5 ms kernel reported in µs, i.e. as 1500 "seconds": small quotients with fractional
    # parts (2097.152 B/s, 178956.97 FLOP/s), so a floor division is not hidden by the rtol.
    ("microseconds-passed-as-seconds", 1500.0, 3 * 2 ** 20, 2 * 512 ** 3, H100_SXM, DType.BF16),
    ("gemm-4096-too-fast-h100", 50e-6, 3 * 4096 * 4096 * 2, 2 * 4096 ** 3, H100_SXM, DType.BF16),
    ("gemm-4096-fine-h100", 180e-6, 3 * 4096 * 4096 * 2, 2 * 4096 ** 3, H100_SXM, DType.BF16),
    ("gemm-4096-between-dense-and-sparse", 100e-6, 3 * 4096 * 4096 * 2, 2 * 4096 ** 3, H100_SXM, DType.BF16),
    ("gemm-fp8-between-dense-and-sparse", 0.4e-3, 3 * 8192 * 8192, 2 * 8192 ** 3, H100_SXM, DType.FP8),
    ("copy-over-bandwidth-h100", 0.5e-3, 2 * 2 ** 30, 0.0, H100_SXM, DType.BF16),
    ("copy-fine-on-h200", 0.5e-3, 2 * 2 ** 30, 0.0, H200_SXM, DType.BF16),
    ("at-the-floor-exactly", 2 * 10 ** 9 / 3.35e12, 2 * 10 ** 9, 0.0, H100_SXM, DType.BF16),
    ("decode-step-b200", 2.0e-3, 16e9, 32e9, B200, DType.FP8),
    ("a100-bf16", 1e-3, 1e9, 400e9, A100_SXM_80GB, DType.BF16),
    ("custom-gpu", 1e-3, 5e9, 1e12, dataclasses.replace(H100_SXM, name="half H100", hbm_bytes_per_s=1.675e12,
                                                           bf16_dense_flops=494.7e12), DType.BF16),
]


_CE_KINDS = {"timing-": "timing", "plausible-": "plausible"}
_CE_GPUS = (H100_SXM, H200_SXM, B200, A100_SXM_80GB)


def _check_plausible(g: Grading, ref, sec: float, nbytes: float, flops: float, gpu, dtype) -> None:
    want = ref.check_plausible(sec, nbytes, flops, gpu, dtype)
    got = g.call("check_plausible", sec, nbytes, flops, gpu, dtype)
    if not isinstance(got, dict) or set(got) != set(want):
        fail(f"expected a dict with exactly the keys {sorted(want)}")
    for k in ("bytes_per_s", "flops_per_s", "bandwidth_fraction", "compute_fraction", "floor_s"):
        expect_close(got[k], want[k], rtol=1e-9, atol=1e-300, name=k)
    expect_equal(got["plausible"], want["plausible"], name="plausible")


def counterexample(g: Grading, trial: Trial) -> None:
    """A fresh input of the kind a failed case tests: time_kernel on a simulated device with a
    few repetitions (random launch costs, outliers and cache effects), or check_plausible on a
    random kernel that is sometimes exactly at its roofline floor or between the dense and the
    2:4-sparse peak."""
    kind = trial.pick(_CE_KINDS) or "timing"
    rng, ref = trial.rng, g.reference()
    if kind == "timing":
        params = dict(seed=rng.randrange(1 << 30), startup_launches=rng.randint(0, 3),
                      outlier_rate=rng.choice([0.0, 0.1, 0.45]), warm_factor=rng.choice([0.2, 0.6]),
                      base_s=rng.choice([2e-6, 100e-6, 4e-3]))
        warmup, reps = rng.randint(params["startup_launches"], 4), rng.randint(1, trial.size + 3)
        g.show_input(device=f"SimulatedDevice({', '.join(f'{k}={v!r}' for k, v in params.items())})",
                     warmup=warmup, reps=reps)
        dev = SimulatedDevice(**params)
        kernel, flush, timer = _host(g, dev)
        got = g.call("time_kernel", kernel, flush, timer, warmup, reps)
        _check_run(got, dev, warmup, reps)
        return
    gpu = rng.choice(_CE_GPUS)
    dtype = DType.BF16 if gpu is A100_SXM_80GB else rng.choice([DType.BF16, DType.FP8])
    nbytes, flops = float(rng.choice([0, 10 ** rng.randint(6, 10)])), float(rng.choice([0, 10 ** rng.randint(9, 13)]))
    if nbytes == flops == 0:
        nbytes = 1e9
    floor = max(nbytes / gpu.hbm_bytes_per_s, flops / gpu.dense_flops(dtype))
    sec = floor * rng.choice([1.0, 0.75, 0.5, 2.0, rng.uniform(0.3, 3.0)])   # 0.75: between dense and 2:4 sparse
    g.show_input(seconds=sec, bytes_moved=nbytes, flops=flops, gpu=gpu.name, dtype=dtype)
    _check_plausible(g, ref, sec, nbytes, flops, gpu, dtype)


def grade(g: Grading) -> None:
    ref = g.reference()
    for name, params, warmup, reps in RUNS:
        with g.case(f"timing-{name}"):
            dev = SimulatedDevice(**params)
            kernel, flush, timer = _host(g, dev)
            got = g.call("time_kernel", kernel, flush, timer, warmup, reps)
            _check_run(got, dev, warmup, reps)

    for name, sec, nbytes, flops, gpu, dtype in PLAUSIBILITY:
        with g.case(f"plausible-{name}"):
            _check_plausible(g, ref, sec, nbytes, flops, gpu, dtype)

    # Input checks last (a submission that dies on one must not take core cases with it).
    for name, args in [("warmup-negative", (-1, 5)), ("reps-zero", (2, 0)),
                       ("reps-negative-after-warmup", (3, -2)), ("reps-bool", (1, True)),
                       ("warmup-bool", (False, 5)), ("reps-float", (2, 5.0)), ("warmup-float", (2.0, 5))]:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            dev = SimulatedDevice(seed=1)
            kernel, flush, timer = _host(g, dev)
            g.raises("ValueError", "time_kernel", kernel, flush, timer, *args)
            if dev.log or dev.events:
                fail(f"ValueError raised, but only after {len(dev.kernels())} kernel launch(es), "
                     f"{len(dev.log) - len(dev.kernels())} flush(es) and {len(dev.events)} event(s): "
                     "validate warmup and reps before launching anything")
    for name, args in [
        ("seconds-zero", (0.0, 1e9, 1e9, H100_SXM, DType.BF16)),
        ("seconds-negative", (-1e-3, 1e9, 1e9, H100_SXM, DType.BF16)),
        ("seconds-nan", (float("nan"), 1e9, 1e9, H100_SXM, DType.BF16)),
        ("seconds-infinite", (math.inf, 1e9, 1e9, H100_SXM, DType.BF16)),
        ("bytes-negative", (1e-3, -1.0, 1e9, H100_SXM, DType.BF16)),
        ("bytes-infinite", (1e-3, math.inf, 1e9, H100_SXM, DType.BF16)),
        ("flops-nan", (1e-3, 1e9, math.nan, H100_SXM, DType.BF16)),
        ("fp8-on-a100", (1e-3, 1e9, 1e9, A100_SXM_80GB, DType.FP8)),
        ("fp32-no-tensor-core-peak", (1e-3, 1e9, 1e9, H100_SXM, DType.FP32)),
        ("int8-no-tensor-core-peak", (1e-3, 1e9, 1e9, H100_SXM, DType.INT8)),
    ]:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "check_plausible", *args)
