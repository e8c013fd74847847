"""Every number quoted in ring-reduce-scatter's statement and editorial, computed by the reference
(collectives run in-process over the ring simulator, one thread per rank)."""

import threading
from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module
from inferprep.sim.ring import RingNetwork, SoloRank, reduce_scatter_messages

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "ring_reduce_scatter.py", "_fig_ring_reference")
EDITORIAL = (ROOT / "exercises" / "ring-reduce-scatter" / "editorial.md").read_text()
STATEMENT = (ROOT / "exercises" / "ring-reduce-scatter" / "statement.md").read_text()


def spmd(fn, xs):
    p = len(xs)
    net = RingNetwork(p, timeout_s=2.0)
    out = [None] * p

    def run(r):
        out[r] = fn(xs[r], net.comm(r))

    ts = [threading.Thread(target=run, args=(r,)) for r in range(p)]
    [t.start() for t in ts]
    [t.join(10) for t in ts]
    return net, out


def test_statement_example_p4_n10():
    xs = [torch.full((10,), r + 1) for r in range(4)]
    net, out = spmd(ref.ring_reduce_scatter, xs)
    assert [o.tolist() for o in out] == [[10] * 3, [10] * 3, [10] * 2, [10] * 2]
    assert [net.steps(r) for r in range(4)] == [3, 3, 3, 3]
    assert [net.bytes_sent(r) // 8 for r in range(4)] == [7, 7, 8, 8]       # rank 0: 7, rank 3: 8
    net, out = spmd(ref.ring_all_reduce, xs)
    assert all(o.tolist() == [10] * 10 for o in out)
    assert [net.steps(r) for r in range(4)] == [6, 6, 6, 6]
    assert [net.bytes_sent(r) // 8 for r in range(4)] == [14, 15, 16, 15]


def test_chunk_boundaries():
    x = torch.arange(10)
    assert [len(c) for c in torch.tensor_split(x, 4)] == [3, 3, 2, 2]
    assert [len(c) for c in torch.chunk(x, 4)] == [3, 3, 3, 1]
    assert len(torch.chunk(torch.arange(6), 4)) == 3                         # fewer than p chunks
    assert 4 * (10 // 4) == 8                                                # floor covers 8 of 10


def test_cost_model_figures():
    assert ref.crossover_bytes(8, 5e-6, 100e9) == pytest.approx(16e6, rel=1e-12)
    assert ref.ring_allreduce_time(1e3, 8, 5e-6, 100e9) * 1e6 == pytest.approx(70.0175, rel=1e-9)
    assert ref.tree_allreduce_time(1e3, 8, 5e-6, 100e9) * 1e6 == pytest.approx(30.02, rel=1e-9)
    assert round(ref.ring_allreduce_time(1e9, 8, 5e-6, 100e9) * 1e3, 2) == 17.57
    assert round(ref.tree_allreduce_time(1e9, 8, 5e-6, 100e9) * 1e3, 2) == 20.03
    table = {p: ref.crossover_bytes(p, 5e-6, 100e9) for p in (2, 4, 8, 16, 64)}
    assert table[2] == 0
    assert table[4] == pytest.approx(2e6) and table[8] == pytest.approx(16e6)
    assert table[16] == pytest.approx(88e6) and table[64] == pytest.approx(1.824e9)


def test_crossover_is_where_the_times_meet():
    for p in (3, 5, 8, 12):
        n = ref.crossover_bytes(p, 2e-6, 50e9)
        assert ref.ring_allreduce_time(n, p, 2e-6, 50e9) == pytest.approx(ref.tree_allreduce_time(n, p, 2e-6, 50e9))
        assert ref.ring_allreduce_time(2 * n, p, 2e-6, 50e9) < ref.tree_allreduce_time(2 * n, p, 2e-6, 50e9)
        assert ref.ring_allreduce_time(n / 2, p, 2e-6, 50e9) > ref.tree_allreduce_time(n / 2, p, 2e-6, 50e9)


def test_tree_model_is_zero_for_one_rank():
    assert ref.tree_allreduce_time(1e9, 1, 5e-6, 100e9) == 0.0 == ref.ring_allreduce_time(1e9, 1, 5e-6, 100e9)
    assert ref.crossover_bytes(1, 5e-6, 100e9) == 0.0


def test_bus_bandwidth_figures():
    t = ref.ring_allreduce_time(1e9, 8, 5e-6, 100e9)
    assert round(1e9 / t / 1e9, 2) == 56.92
    assert round(ref.bus_bandwidth("all_reduce", 1e9, t, 8) / 1e9, 2) == 99.60
    t_rs = ref.reduce_scatter_time(1e9, 8, 5e-6, 100e9)
    assert t_rs * 1e3 == pytest.approx(8.785) and t_rs == pytest.approx(t / 2)
    assert round(1e9 / t_rs / 1e9, 2) == 113.83
    assert round(ref.bus_bandwidth("reduce_scatter", 1e9, t_rs, 8) / 1e9, 2) == 99.60
    t_small = ref.ring_allreduce_time(1e6, 8, 5e-6, 100e9)
    assert t_small * 1e6 == pytest.approx(87.5) and ref.bus_bandwidth("all_reduce", 1e6, t_small, 8) == pytest.approx(20e9)
    for fig in ("**56.92 GB/s**", "**99.60 GB/s**", "**113.83 GB/s**", "8.785 ms", "87.5 µs", "**20.0 GB/s**"):
        assert fig in EDITORIAL
    # with no latency the bus bandwidth of the ring is exactly the link bandwidth, for any p
    for p in (2, 3, 8, 64):
        assert ref.bus_bandwidth("all_reduce", 1e9, ref.ring_allreduce_time(1e9, p, 0.0, 100e9), p) == pytest.approx(100e9)
        assert ref.bus_bandwidth("all_gather", 1e9, ref.reduce_scatter_time(1e9, p, 0.0, 100e9), p) == pytest.approx(100e9)


def test_statement_keeps_the_toy_crossover_and_drops_the_nvlink_reading():
    assert "16e6 bytes" in STATEMENT and "NVLink-class" not in STATEMENT
    assert "RCCL #7711 / NCCL #1950" not in STATEMENT + EDITORIAL


def test_solo_rank_of_the_public_example():
    """examples.py's rank-1-alone case: what rank 0 sends, and what rank 1 must send and return."""
    xs = [torch.full((5,), k + 1) for k in range(3)]
    msgs, _ = reduce_scatter_messages(xs)
    assert [m.tolist() for m in msgs[0]] == [[1], [4, 4]]
    assert [m.tolist() for m in msgs[1]] == [[2, 2], [3]]
    solo = SoloRank(3, 1, msgs[0])
    assert ref.ring_reduce_scatter(xs[1], solo).tolist() == [6, 6]
    assert solo.check_messages(msgs[1]) == []
