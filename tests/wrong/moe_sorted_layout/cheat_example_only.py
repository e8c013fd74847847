"""WRONG: cheat that hard-codes the statement's examples. Killed by align-docstring-example-5-experts."""
import torch


def moe_align_block_size(topk_ids, block_size, num_experts):
    d = topk_ids.device
    return (torch.tensor([0, 4, 3, 6, 1, 2, 5, 6], dtype=torch.int32, device=d),
            torch.tensor([0, 1, 2, 2], dtype=torch.int32, device=d), 8)


def fused_moe(x, w1, w2, topk_weights, sorted_token_ids, expert_ids, block_size):
    return torch.zeros_like(x)


def padding_cost(num_tokens, num_experts, top_k, block_size):
    return {"real_rows": 8, "expected_padded_rows": 128.0, "expected_overhead": 16.0, "buffer_rows": 3848}


def loop_overheads(*args):
    return {"active_experts": 222.4424876855104, "launches_per_step": 77409.98571455762,
            "rows_per_active_expert": 2.301718549038467, "gather_bytes_per_layer": 14680064,
            "scatter_add_bytes_per_layer": 22020096}


def slowdown_causes():
    return ["gather_scatter_copies", "kernel_launches", "small_gemms"]
