"""Public examples for triton-flash-attention (run them with `inferprep grade --public`)."""

import torch

from inferprep.grading import Grading, expect_tensor, kernel_input, kernel_output


def launch(g, q, k, v, causal, scale):
    heads, t, d = q.shape
    n = k.shape[1]
    qa, ka, va = (kernel_input(x.to(g.device), name=nm) for x, nm in ((q, "q"), (k, "k"), (v, "v")))
    oa = kernel_output(q.shape, q.dtype, g.device, name="o")
    la = kernel_output((heads, t), torch.float32, g.device, name="lse")
    return g.launch("flash_attention_kernel", (-(-t // 16), heads), qa, ka, va, oa, la,
                    qa.stride[0], qa.stride[1], ka.stride[0], ka.stride[1], va.stride[0], va.stride[1],
                    oa.stride[0], oa.stride[1], la.stride[0], t, n, scale,
                    HEAD_DIM=d, CAUSAL=causal, BLOCK_M=16, BLOCK_N=16)


def grade(g: Grading) -> None:
    with g.case("scores-1-2-3-4"):   # one query, keys [1, 2, 3, 4] in dimension 0 of d = 16
        q = torch.zeros(1, 1, 16)
        q[0, 0, 0] = 1.0
        k = torch.zeros(1, 4, 16)
        k[0, :, 0] = torch.tensor([1.0, 2.0, 3.0, 4.0])
        o, lse = launch(g, q, k, k.clone(), causal=False, scale=1.0)
        expect_tensor(o[0, 0, :1], torch.tensor([3.4927], device=g.device), name="o", atol=1e-4)
        expect_tensor(lse, torch.tensor([[4.4402]], device=g.device), name="lse", atol=1e-4)
    with g.case("causal-T2-S3-uniform"):   # query 0 sees keys 0, 1; query 1 sees keys 0, 1, 2
        v = torch.zeros(1, 3, 16)
        v[0, :, 0] = torch.tensor([1.0, 2.0, 3.0])
        o, lse = launch(g, torch.zeros(1, 2, 16), torch.zeros(1, 3, 16), v, causal=True, scale=1.0)
        expect_tensor(o[0, :, 0], torch.tensor([1.5, 2.0], device=g.device), name="o", atol=1e-5)
        expect_tensor(lse[0], torch.tensor([0.693147, 1.098612], device=g.device), name="lse", atol=1e-5)
