"""Public examples for flash-attention-backward (run them with `inferprep grade --public`)."""

import math

import torch

from inferprep.grading import Grading, expect_tensor, fail


def triple(out):
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        fail("flash_attention_backward must return (dq, dk, dv)")
    return out


def grade(g: Grading) -> None:
    dev = g.device
    # N = 2, d = 1, scale = 1, q = 0 so every visible key gets the same weight; k = [1, 2], v = [1, 3], dO = 1.
    q = torch.zeros(1, 1, 2, 1, device=dev)
    k = torch.tensor([1.0, 2.0], device=dev).view(1, 1, 2, 1)
    v = torch.tensor([1.0, 3.0], device=dev).view(1, 1, 2, 1)
    do = torch.ones(1, 1, 2, 1, device=dev)
    with g.case("hand-worked-full"):
        o = torch.full((1, 1, 2, 1), 2.0, device=dev)
        lse = torch.full((1, 1, 2), math.log(2.0), device=dev)
        dq, dk, dv = triple(g.call("flash_attention_backward", q, k, v, o, lse, do, causal=False,
                                   block_q=1, block_k=1, scale=1.0))
        expect_tensor(dq, torch.tensor([0.5, 0.5], device=dev).view(1, 1, 2, 1), name="dq", atol=1e-6)
        expect_tensor(dk, torch.zeros(1, 1, 2, 1, device=dev), name="dk", atol=1e-6)
        expect_tensor(dv, torch.tensor([1.0, 1.0], device=dev).view(1, 1, 2, 1), name="dv", atol=1e-6)
    with g.case("hand-worked-causal"):
        o = torch.tensor([1.0, 2.0], device=dev).view(1, 1, 2, 1)
        lse = torch.tensor([0.0, math.log(2.0)], device=dev).view(1, 1, 2)
        dq, dk, dv = triple(g.call("flash_attention_backward", q, k, v, o, lse, do, causal=True,
                                   block_q=1, block_k=1, scale=1.0))
        expect_tensor(dq, torch.tensor([0.0, 0.5], device=dev).view(1, 1, 2, 1), name="dq", atol=1e-6)
        expect_tensor(dk, torch.zeros(1, 1, 2, 1, device=dev), name="dk", atol=1e-6)
        expect_tensor(dv, torch.tensor([1.5, 0.5], device=dev).view(1, 1, 2, 1), name="dv", atol=1e-6)
    with g.case("matches-autograd-N50-blocks-16x12-causal"):
        gen = torch.Generator().manual_seed(7)
        q, k, v, do = (torch.randn(1, 2, 50, 8, generator=gen, dtype=torch.float64) for _ in range(4))
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        s = leaves[0] @ leaves[1].transpose(-1, -2) / math.sqrt(8)
        s = s.masked_fill(torch.ones(50, 50, dtype=torch.bool).triu(1), -math.inf)
        o = torch.softmax(s, -1) @ leaves[2]
        o.backward(do)
        args = [t.to(dev) for t in (q, k, v, o.detach(), torch.logsumexp(s, -1).detach(), do)]
        got = triple(g.call("flash_attention_backward", *args, causal=True, block_q=16, block_k=12))
        for name, x, leaf in zip(("dq", "dk", "dv"), got, leaves):
            expect_tensor(x, leaf.grad.to(dev), name=name, rtol=1e-9, atol=1e-10 * float(leaf.grad.abs().max()))
