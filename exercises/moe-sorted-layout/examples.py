"""Public cases for moe-sorted-layout (the statement's examples)."""

import torch

from inferprep.grading import Grading, expect_close, expect_equal, expect_tensor, fail


def grade(g: Grading) -> None:
    dev = g.device
    with g.case("statement-layout"):
        ids = torch.tensor([[0, 2], [2, 1], [0, 2]], dtype=torch.int32, device=dev)
        out = g.call("moe_align_block_size", ids, 2, 3)
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            fail("expected (sorted_token_ids, expert_ids, num_tokens_post_padded)")
        s, e, n = out
        expect_equal(n, 8, name="num_tokens_post_padded")
        expect_tensor(e, torch.tensor([0, 1, 2, 2], dtype=torch.int32, device=dev), name="expert_ids")
        if not isinstance(s, torch.Tensor) or s.dtype != torch.int32 or s.shape != (8,):
            fail("sorted_token_ids: expected an int32 tensor of 8 entries")
        blocks = [sorted(s[i:i + 2].tolist()) for i in range(0, 8, 2)]
        expect_equal(blocks[0], [0, 4], name="expert 0's block")
        expect_equal(blocks[1], [3, 6], name="expert 1's block")
        expect_equal(sorted(blocks[2] + blocks[3]), [1, 2, 5, 6], name="expert 2's blocks")
        if s[7].item() != 6:
            fail("sorted_token_ids: the pad of expert 2 must come after its slots")
    with g.case("statement-forward"):
        g0 = torch.Generator().manual_seed(0)
        x = torch.randn(3, 4, generator=g0, dtype=torch.float64).to(dev)
        w1 = torch.randn(3, 6, 4, generator=g0, dtype=torch.float64).to(dev)
        w2 = torch.randn(3, 4, 3, generator=g0, dtype=torch.float64).to(dev)
        tw = torch.tensor([[0.7, 0.3], [0.6, 0.4], [0.5, 0.5]], dtype=torch.float64, device=dev)
        ti = [[0, 2], [2, 1], [0, 2]]
        want = torch.zeros(3, 4, dtype=torch.float64)
        for t in range(3):
            for k in range(2):
                e = ti[t][k]
                gu = w1[e].cpu() @ x[t].cpu()
                want[t] += tw[t, k].item() * (w2[e].cpu() @ (torch.nn.functional.silu(gu[:3]) * gu[3:]))
        s = torch.tensor([4, 0, 6, 3, 5, 1, 6, 2], dtype=torch.int32, device=dev)   # shuffled inside experts
        e = torch.tensor([0, 1, 2, 2], dtype=torch.int32, device=dev)
        out = g.call("fused_moe", x, w1, w2, tw, s, e, 2)
        expect_tensor(out, want.to(dev), rtol=0, atol=1e-10 * float(want.abs().max()))
    with g.case("statement-padding"):
        out = g.call("padding_cost", 1, 256, 8, 16)
        expect_equal(out["real_rows"], 8, name="['real_rows']")
        expect_close(out["expected_padded_rows"], 128.0, rtol=1e-9, name="['expected_padded_rows']")
        expect_close(out["expected_overhead"], 16.0, rtol=1e-9, name="['expected_overhead']")
        expect_equal(out["buffer_rows"], 3848, name="['buffer_rows']")
    with g.case("deepseek-v3-loop-b64"):
        out = g.call("loop_overheads", 64, 256, 8, 7168, 58, 2, 6)
        expect_close(out["active_experts"], 222.4424876855104, rtol=1e-9, name="['active_experts']")
        expect_close(out["launches_per_step"], 77409.98571455762, rtol=1e-9, name="['launches_per_step']")
        expect_close(out["rows_per_active_expert"], 2.301718549038467, rtol=1e-9,
                     name="['rows_per_active_expert']")
        expect_equal(out["gather_bytes_per_layer"], 14680064, name="['gather_bytes_per_layer']")
        expect_equal(out["scatter_add_bytes_per_layer"], 22020096, name="['scatter_add_bytes_per_layer']")
