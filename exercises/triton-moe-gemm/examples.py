"""Public examples for triton-moe-gemm (run them with `inferprep grade --public`)."""

import torch

from inferprep.grading import Grading, expect_tensor, kernel_input, kernel_output


def grade(g: Grading) -> None:
    with g.case("three-tokens-top-2-three-experts"):
        # topk_ids [[0, 2], [2, 1], [0, 2]]: slots 0:e0 1:e2 2:e2 3:e1 4:e0 5:e2; blocks of 16,
        # sentinel 6. Token t's activation is (t + 1) * ones(16); expert e's weight is (e + 1) * I.
        dev = g.device
        a = torch.arange(1.0, 4.0)[:, None].expand(3, 16).contiguous()
        b = torch.stack([(e + 1.0) * torch.eye(16) for e in range(3)])
        ids = [0, 4] + [6] * 14 + [3] + [6] * 15 + [1, 2, 5] + [6] * 13
        aa, ba = kernel_input(a.to(dev), name="a"), kernel_input(b.to(dev), name="b")
        wa = kernel_input(torch.tensor([0.5, 0.5, 1.0, 0.0, 0.25, 0.75], device=dev), name="topk_weights")
        ia = kernel_input(torch.tensor(ids, dtype=torch.int32, device=dev), name="sorted_token_ids")
        ea = kernel_input(torch.tensor([0, 1, 2], dtype=torch.int32, device=dev), name="expert_ids")
        ca = kernel_output((6, 16), torch.float32, dev, name="c")
        (c,) = g.launch("moe_gemm_kernel", (3, 1), aa, ba, ca, wa, ia, ea, 48, 6, 2, 16, 16,
                        aa.stride[0], ba.stride[0], ba.stride[1], ca.stride[0],
                        MUL_ROUTED_WEIGHT=True, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
        # slot s: token s // 2 (value s // 2 + 1), expert e (factor e + 1), weight w[s]
        want = torch.tensor([1 * 1 * 0.5, 1 * 3 * 0.5, 2 * 3 * 1.0, 2 * 2 * 0.0, 3 * 1 * 0.25, 3 * 3 * 0.75])
        expect_tensor(c, want[:, None].expand(6, 16).to(dev), name="c", atol=1e-5)
