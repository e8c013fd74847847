"""Every number quoted in ring-reduce-scatter's statement and editorial, computed by the reference
(collectives run in-process over the ring simulator, one thread per rank)."""

import threading
from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module
from inferprep.sim.ring import RingNetwork

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "ring_reduce_scatter.py", "_fig_ring_reference")


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
