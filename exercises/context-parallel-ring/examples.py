"""Public cases of context-parallel-ring: the statement's shard and work figures, ring attention
on 2 and 4 ranks (all ranks together, then one rank alone), the Llama 3.1 70B traffic and an
overlap threshold."""

import math

import torch

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, expect_tensor, fail
from inferprep.sim.ring import RingNetwork, SoloRank
from inferprep.specs import H100_SXM, LLAMA_3_1_70B, DType


def _full(Q, K, V):
    g = Q.shape[0] // K.shape[0]
    K, V = K.repeat_interleave(g, 0), V.repeat_interleave(g, 0)
    N = Q.shape[1]
    s = (Q @ K.transpose(1, 2)) / math.sqrt(Q.shape[2])
    return torch.softmax(s.masked_fill(torch.triu(torch.ones(N, N, dtype=torch.bool), 1), float("-inf")), -1) @ V


def grade(g: Grading) -> None:
    with g.case("zigzag positions, N=64, p=4, rank 1"):
        got = g.call("shard_positions", 64, 4, 1, "zigzag")
        expect_tensor(got, torch.cat([torch.arange(8, 16), torch.arange(48, 56)]), check_device=False)

    with g.case("work: contiguous vs zigzag, N=64, p=4"):
        c = g.call("causal_work", 64, 4, "contiguous")
        expect_equal(c["per_rank"], [256, 512, 768, 1024], name="contiguous per_rank")
        expect_equal(c["makespan"], 1024, name="contiguous makespan")
        expect_close(c["efficiency"], 0.625, rtol=1e-12, name="contiguous efficiency")
        z = g.call("causal_work", 64, 4, "zigzag")
        expect_equal(z["work"], [[192, 128, 128, 128]] * 4, name="zigzag work")
        expect_close(z["efficiency"], 1.0, rtol=1e-12, name="zigzag efficiency")

    gen = torch.Generator().manual_seed(0)
    for p, scheme in ((2, "contiguous"), (4, "zigzag")):
        with g.case(f"ring attention, p={p}, N=32, {scheme}, GQA 4:2, float64"):
            N = 32
            Q = torch.randn(4, N, 8, generator=gen, dtype=torch.float64)
            K = torch.randn(2, N, 8, generator=gen, dtype=torch.float64)
            V = torch.randn(2, N, 8, generator=gen, dtype=torch.float64)
            want = _full(Q, K, V)
            net = RingNetwork(p, timeout_s=3.0)
            comms = [g.host(net.comm(r), ["send_recv"], {"rank": r, "world_size": p}, concurrent=True) for r in range(p)]
            pos = []
            for r in range(p):
                if scheme == "contiguous":
                    pos.append(torch.arange(r * N // p, (r + 1) * N // p))
                else:
                    c = N // (2 * p)
                    pos.append(torch.cat([torch.arange(r * c, (r + 1) * c), torch.arange((2 * p - 1 - r) * c, (2 * p - r) * c)]))
            out = g.call_spmd("ring_attention", [((Q[:, pos[r]].to(g.device), K[:, pos[r]].to(g.device),
                                                   V[:, pos[r]].to(g.device), comms[r], N, scheme), {}) for r in range(p)])
            for r in range(p):
                expect_tensor(out[r], want[:, pos[r]].to(g.device), rtol=1e-9, atol=1e-10, name=f"rank {r}")
            expect_equal([net.steps(r) for r in range(p)], [p - 1] * p, name="steps per rank")
            expect_equal([net.bytes_sent(r) for r in range(p)], [(p - 1) * 2 * 2 * (N // p) * 8 * 8] * p,
                         name="bytes sent per rank")

    with g.case("ring attention, rank 0 of 2 alone: the grader plays rank 1"):
        Q = torch.randn(1, 8, 4, generator=gen, dtype=torch.float64)
        K = torch.randn(1, 8, 4, generator=gen, dtype=torch.float64)
        V = torch.randn(1, 8, 4, generator=gen, dtype=torch.float64)
        mine, theirs = torch.arange(0, 4), torch.arange(4, 8)
        solo = SoloRank(2, 0, [torch.cat([K[:, theirs].reshape(-1), V[:, theirs].reshape(-1)])])
        comm = g.host(solo, ["send_recv"], {"rank": 0, "world_size": 2})
        out = g.call("ring_attention", Q[:, mine].to(g.device), K[:, mine].to(g.device), V[:, mine].to(g.device),
                     comm, 8, "contiguous")
        expect_tensor(out, _full(Q, K, V)[:, mine].to(g.device), rtol=1e-9, atol=1e-10, name="rank 0")
        problems = solo.check_messages([torch.cat([K[:, mine].reshape(-1), V[:, mine].reshape(-1)])])
        if problems:
            fail("; ".join(problems))

    with g.case("traffic: Llama 3.1 70B, 128K tokens, p=8, BF16"):
        t = g.call("cp_traffic", LLAMA_3_1_70B, 131072, 8, DType.BF16)
        expect_close(t["cp_bytes_per_layer"], 0.4375 * 2**30, rtol=1e-12, name="cp_bytes_per_layer")
        expect_close(t["tp_bytes_per_layer"], 7 * 2**30, rtol=1e-12, name="tp_bytes_per_layer")
        expect_close(t["tp_over_cp"], 16.0, rtol=1e-12, name="tp_over_cp")

    with g.case("overlap threshold: Llama 3.1 70B, H100, NVLink, contiguous"):
        expect_close(g.call("overlap_threshold", LLAMA_3_1_70B, H100_SXM, DType.BF16, "nvlink", 1.0, "contiguous"),
                     274.8333333333333, rtol=1e-12)

    with g.case("zigzag rejects N not a multiple of 2p", group=INPUT_CHECKS):
        g.raises("ValueError", "shard_positions", 12, 4, 0, "zigzag")
