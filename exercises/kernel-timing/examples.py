"""Public cases: a quiet simulated device, the statement's GEMM example."""

from inferprep.grading import Grading, expect_close, expect_equal, fail
from inferprep.sim.kernel_clock import Handle, SimulatedDevice
from inferprep.specs import H100_SXM, DType


def grade(g: Grading) -> None:
    with g.case("quiet device"):
        # no noise: every cold launch takes 100 us, a warm one 60 us, the first two add 20 ms
        dev = SimulatedDevice(jitter=0.0, outlier_rate=0.0)
        kernel = g.host(Handle(dev.kernel), ["__call__"])
        flush = g.host(Handle(dev.flush), ["__call__"])
        timer = g.host(dev, ["record", "synchronize", "elapsed"])
        got = g.call("time_kernel", kernel, flush, timer, 2, 5)
        if not isinstance(got, dict) or "times" not in got:
            fail("expected a dict with 'times', 'median', 'iqr', 'min'")
        for i, t in enumerate(got["times"]):
            expect_close(t, 100e-6, rtol=1e-9, name=f"times[{i}]")
        expect_close(got["median"], 100e-6, rtol=1e-9, name="median")
        expect_close(got["iqr"], 0.0, atol=1e-15, name="iqr")
        expect_equal(len(dev.kernels()), 7, name="kernel launches")

    with g.case("gemm 4096 at 50 us on H100"):
        n = 4096
        got = g.call("check_plausible", 50e-6, 3 * n * n * 2, 2 * n ** 3, H100_SXM, DType.BF16)
        expect_equal(got["plausible"], False, name="plausible")
        expect_close(got["compute_fraction"], 2 * n ** 3 / 50e-6 / 989.4e12, rtol=1e-9, name="compute_fraction")
        expect_close(got["floor_s"], 2 * n ** 3 / 989.4e12, rtol=1e-9, name="floor_s")
