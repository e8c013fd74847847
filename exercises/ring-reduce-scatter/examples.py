"""Public cases of ring-reduce-scatter: the statement's example (p = 4, N = 10), an empty chunk
(N < p), all-gather, all-reduce, one rank run alone with its partners played by the grader, and
the cost model's crossover."""

import torch

from inferprep.grading import Grading, expect_close, expect_equal, expect_tensor, fail
from inferprep.sim.ring import RingNetwork, SoloRank


def _ring(g: Grading, p: int):
    net = RingNetwork(p, timeout_s=2.0)
    comms = [g.host(net.comm(r), ["send_recv"], {"rank": r, "world_size": p}, concurrent=True) for r in range(p)]
    return net, comms


def grade(g: Grading) -> None:
    with g.case("reduce-scatter p=4 N=10: every element sums to 10"):
        net, comms = _ring(g, 4)
        out = g.call_spmd("ring_reduce_scatter", [((torch.full((10,), r + 1), comms[r]), {}) for r in range(4)])
        for r, size in enumerate([3, 3, 2, 2]):
            expect_tensor(out[r], torch.full((size,), 10), name=f"rank {r}")
        expect_equal([net.steps(r) for r in range(4)], [3, 3, 3, 3], name="steps per rank")
        expect_equal([net.bytes_sent(r) // 8 for r in range(4)], [7, 7, 8, 8], name="elements sent per rank")

    with g.case("reduce-scatter p=4 N=2: empty chunks are still messages"):
        net, comms = _ring(g, 4)
        out = g.call_spmd("ring_reduce_scatter", [((torch.full((2,), r + 1), comms[r]), {}) for r in range(4)])
        for r, size in enumerate([1, 1, 0, 0]):
            expect_tensor(out[r], torch.full((size,), 10), name=f"rank {r}")
        expect_equal([net.steps(r) for r in range(4)], [3, 3, 3, 3], name="steps per rank")

    with g.case("all-gather p=3 N=7"):
        net, comms = _ring(g, 3)
        x = torch.arange(7)
        out = g.call_spmd("ring_all_gather", [((c, comms[r], 7), {}) for r, c in enumerate(torch.tensor_split(x, 3))])
        for r in range(3):
            expect_tensor(out[r], x, name=f"rank {r}")

    with g.case("all-reduce p=3 N=10"):
        net, comms = _ring(g, 3)
        out = g.call_spmd("ring_all_reduce", [((torch.full((10,), r + 1), comms[r]), {}) for r in range(3)])
        for r in range(3):
            expect_tensor(out[r], torch.full((10,), 6), name=f"rank {r}")
        expect_equal([net.steps(r) for r in range(3)], [4, 4, 4], name="steps per rank")

    with g.case("reduce-scatter p=3 N=5, rank 1 alone: the grader plays ranks 0 and 2"):
        # rank k holds (k + 1) * ones(5); chunks of sizes 2, 2, 1. Rank 0 sends rank 1 its own
        # chunk 2 in step 0 and chunk 1 of x_2 + x_0 in step 1.
        solo = SoloRank(3, 1, [torch.tensor([1]), torch.tensor([4, 4])])
        comm = g.host(solo, ["send_recv"], {"rank": 1, "world_size": 3})
        out = g.call("ring_reduce_scatter", torch.full((5,), 2), comm)
        expect_tensor(out, torch.tensor([6, 6]), name="rank 1")
        problems = solo.check_messages([torch.tensor([2, 2]), torch.tensor([3])])
        if problems:
            fail("; ".join(problems))

    with g.case("cost model: p=8, alpha=5 us, 100 GB/s"):
        expect_close(g.call("ring_allreduce_time", 1e9, 8, 5e-6, 100e9), 0.01757, rtol=1e-9)
        expect_close(g.call("tree_allreduce_time", 1e9, 8, 5e-6, 100e9), 0.02003, rtol=1e-9)
        expect_close(g.call("crossover_bytes", 8, 5e-6, 100e9), 16e6, rtol=1e-9)
        expect_close(g.call("tree_allreduce_time", 1e9, 1, 5e-6, 100e9), 0.0, rtol=0.0, atol=0.0,
                     name="tree_allreduce_time with one rank")
