"""Unit tests of inferprep.sim.kernel_clock.SimulatedDevice (the kernel-timing exercise's device)."""

import pytest

from inferprep.sim.kernel_clock import SimulatedDevice


def quiet(**kw):
    return SimulatedDevice(jitter=0.0, outlier_rate=0.0, **kw)


def test_events_need_a_sync_and_an_idle_stream_times_the_launch_too():
    d = quiet(startup_launches=0)
    a = d.record()                           # idle stream: stamped at once (t = 0)
    d.kernel()                               # reaches the stream when the launch returns (5 us)
    b = d.record()
    with pytest.raises(RuntimeError):
        d.elapsed(a, b)                      # the host is 5 us in, the kernel ends at 105 us
    d.synchronize()
    assert d.elapsed(a, b) == pytest.approx(105e-6)     # kernel + its launch latency
    assert d.kernels()[0].duration == pytest.approx(100e-6)
    with pytest.raises(ValueError):
        d.elapsed(0, 7)


def test_synchronizing_between_flush_and_start_event_times_the_launch():
    d = quiet(startup_launches=0)
    d.flush()
    d.synchronize()                          # the queue drains: the host is no longer ahead
    a = d.record()
    d.kernel()
    b = d.record()
    d.synchronize()
    assert d.elapsed(a, b) == pytest.approx(105e-6)


def test_warm_cache_startup_and_flush():
    d = quiet(startup_launches=1, startup_s=1e-3)
    d.kernel()
    d.kernel()
    d.flush()
    d.kernel()
    ks = d.kernels()
    assert ks[0].duration == pytest.approx(1.1e-3) and ks[0].cold
    assert ks[1].duration == pytest.approx(60e-6) and not ks[1].cold
    assert ks[2].duration == pytest.approx(100e-6) and ks[2].cold


def test_busy_stream_times_the_kernel_alone():
    d = quiet(startup_launches=0)
    d.flush()                                # still running when the start event is queued:
                                             # the kernel is queued before the GPU reaches it
    a = d.record()
    d.kernel()
    b = d.record()
    d.synchronize()
    assert d.elapsed(a, b) == pytest.approx(100e-6)


def test_deterministic():
    x, y = SimulatedDevice(seed=3), SimulatedDevice(seed=3)
    for dev in (x, y):
        for _ in range(20):
            dev.flush()
            dev.kernel()
    assert [k.duration for k in x.kernels()] == [k.duration for k in y.kernels()]


def test_flush_durations_vary_and_are_seeded():
    x, y = SimulatedDevice(seed=5), SimulatedDevice(seed=5)
    for dev in (x, y):
        for _ in range(10):
            dev.flush()
    fx = [f.duration for f in x.log]
    assert fx == [f.duration for f in y.log]
    assert len(set(fx)) == 10 and all(30e-6 <= f <= 90e-6 for f in fx)
    z = SimulatedDevice(seed=5, flush_jitter=0.0)
    z.flush()
    assert z.log[0].duration == 60e-6
