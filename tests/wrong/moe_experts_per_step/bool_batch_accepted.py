"""WRONG (input checks): accepts batch=True (bool is an int subclass), which the statement rejects."""
import math
import torch

def _isint(x):
    return isinstance(x, int) and not isinstance(x, bool)

def _routing(E, k):
    if not _isint(E) or not _isint(k) or E < 1 or k < 1 or k > E:
        raise ValueError("routing")

def expected_distinct_experts(num_experts, top_k, batch):
    _routing(num_experts, top_k)
    if not isinstance(batch, int) or batch < 0:
        raise ValueError("batch")
    if batch == 0:
        return 0.0
    if top_k == num_experts:
        return float(num_experts)
    return float(num_experts * -math.expm1(batch * math.log1p(-top_k / num_experts)))

def distinct_experts(topk_ids, num_experts):
    if not _isint(num_experts) or num_experts < 1:
        raise ValueError("E")
    if not isinstance(topk_ids, torch.Tensor) or topk_ids.dim() != 2:
        raise ValueError("2d")
    if topk_ids.dtype.is_floating_point or topk_ids.dtype.is_complex or topk_ids.dtype == torch.bool:
        raise ValueError("dtype")
    B, k = topk_ids.shape
    if k < 1 or k > num_experts:
        raise ValueError("k")
    if B == 0:
        return 0
    t = topk_ids.to("cpu", torch.int64)
    if (t < 0).any() or (t >= num_experts).any():
        raise ValueError("range")
    s, _ = t.sort(dim=1)
    if k > 1 and (s[:, 1:] == s[:, :-1]).any():
        raise ValueError("dup")
    return int(torch.unique(t).numel())

def _common(batch, E, k, L, ep, ap, bpp):
    _routing(E, k)
    for x in (batch, L, ep, ap):
        if not _isint(x):
            raise ValueError("int")
    if batch < 1 or L < 0 or ep < 0 or ap < 0:
        raise ValueError("range")
    if isinstance(bpp, bool) or not isinstance(bpp, (int, float)) or not math.isfinite(bpp) or bpp <= 0:
        raise ValueError("bpp")

def moe_step_bytes(batch, num_experts, top_k, num_moe_layers, expert_params, always_params, bytes_per_param):
    _common(batch, num_experts, top_k, num_moe_layers, expert_params, always_params, bytes_per_param)
    D = expected_distinct_experts(num_experts, top_k, batch)
    return float(bytes_per_param * (always_params + num_moe_layers * D * expert_params))

def moe_cost_profile(batch, num_experts, top_k, num_moe_layers, expert_params, always_params, bytes_per_param):
    _common(batch, num_experts, top_k, num_moe_layers, expert_params, always_params, bytes_per_param)
    total = always_params + num_moe_layers * num_experts * expert_params
    if total == 0:
        raise ValueError("empty")
    active = always_params + num_moe_layers * top_k * expert_params
    D = expected_distinct_experts(num_experts, top_k, batch)
    sb = moe_step_bytes(batch, num_experts, top_k, num_moe_layers, expert_params, always_params, bytes_per_param)
    dense = float(bytes_per_param * total)
    return {"experts_per_layer": D, "expert_fraction": D / num_experts, "step_bytes": sb,
            "bytes_per_token": sb / batch, "dense_step_bytes": dense,
            "active_bytes": float(bytes_per_param * active),
            "bandwidth_saving": dense / sb, "compute_saving": total / active}

def batch_for_expert_fraction(num_experts, top_k, fraction):
    _routing(num_experts, top_k)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not (0 < fraction < 1):
        raise ValueError("fraction")
    if top_k == num_experts:
        return 1
    B = max(1, math.ceil(math.log1p(-fraction) / math.log1p(-top_k / num_experts)))
    return B
