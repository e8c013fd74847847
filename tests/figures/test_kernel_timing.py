"""Every figure quoted by kernel-timing's statement and editorial, from the reference, the public
simulated device and the known-wrong variants."""

from pathlib import Path

import pytest

from inferprep.grading import load_module
from inferprep.sim.kernel_clock import CpuTimer, SimulatedDevice, l2_flush
from inferprep.specs import H100_SXM, H200_SXM, DType
from inferprep.wrong_variants import load_variant

ROOT = Path(__file__).resolve().parents[2]
R = load_module(ROOT / "reference" / "kernel_timing.py", "_fig_kernel_timing")


def run(mod, seed=11, warmup=3, reps=21):
    d = SimulatedDevice(seed=seed)
    return mod.time_kernel(d.kernel, d.flush, d, warmup, reps)


def wrong(name):
    return load_variant("kernel_timing", name, f"_fig_kt_{name}")


def us(x):
    return round(x * 1e6, 1)


def test_correct_loop_on_the_simulated_device():
    r = run(R)
    assert us(r["median"]) == 100.9 and us(r["iqr"]) == 2.6 and us(r["min"]) == 95.6
    assert us(max(r["times"])) == 220.9
    assert us(sum(r["times"]) / len(r["times"])) == 109.5


def test_mistakes_table():
    r = run(wrong("no_warmup"))
    assert round(sum(r["times"]) / 21 * 1e6) == 2014 and round(r["times"][0] * 1e6) == 20099
    assert us(run(wrong("flush_once"))["median"]) == 60.5
    assert us(run(wrong("flush_inside_interval"))["median"]) == 160.9
    assert set(us(t) for t in run(wrong("one_interval_average"))["times"]) == {169.4}
    idle = run(wrong("sync_before_start_event"))      # the GPU waits for each 5 us launch
    assert us(idle["median"]) == 105.9 and SimulatedDevice().launch_s == 5e-6
    assert round(100 * (idle["median"] / run(R)["median"] - 1)) == 5
    d = SimulatedDevice(seed=11)            # a host clock read right after the launch returns
    for _ in range(3):
        d.kernel()
    d.flush()
    t0 = d.host
    d.kernel()
    assert us(d.host - t0) == 5.0
    d = SimulatedDevice(seed=11)
    with pytest.raises(RuntimeError):
        wrong("no_synchronize").time_kernel(d.kernel, d.flush, d, 3, 21)


def test_gemm_and_copy_figures():
    n = 4096
    assert round(2 * n ** 3 / 1e9, 1) == 137.4 and round(3 * n * n * 2 / 1e6, 1) == 100.7
    r = R.check_plausible(50e-6, 3 * n * n * 2, 2 * n ** 3, H100_SXM, DType.BF16)
    assert round(r["flops_per_s"] / 1e15, 2) == 2.75 and round(r["compute_fraction"], 2) == 2.78
    assert round(r["floor_s"] * 1e6, 1) == 138.9 and r["plausible"] is False
    assert round(R.check_plausible(100e-6, 0, 2 * n ** 3, H100_SXM, DType.BF16)["compute_fraction"], 2) == 1.39
    assert wrong("sparse_peak").check_plausible(100e-6, 0, 2 * n ** 3, H100_SXM, DType.BF16)["plausible"] is True
    c = R.check_plausible(0.5e-3, 2 * 2 ** 30, 0, H100_SXM, DType.BF16)
    assert round(c["bytes_per_s"] / 1e12, 2) == 4.29 and round(c["bandwidth_fraction"], 2) == 1.28
    assert c["plausible"] is False
    h = R.check_plausible(0.5e-3, 2 * 2 ** 30, 0, H200_SXM, DType.BF16)
    assert round(h["bandwidth_fraction"], 2) == 0.89 and h["plausible"] is True
    assert round(2 ** 30 / 1e9 - 1, 2) == 0.07


def test_cpu_timer_runs_the_same_loop():
    import torch
    a = torch.randn(64, 64)
    r = R.time_kernel(lambda: a @ a, l2_flush("cpu", 1 << 20), CpuTimer(), 1, 5)
    assert len(r["times"]) == 5 and all(t > 0 for t in r["times"]) and r["min"] <= r["median"]
