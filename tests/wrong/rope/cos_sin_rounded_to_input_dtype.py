"""WRONG: rounds cos and sin to the input dtype before the rotation, as Hugging Face's LlamaRotaryEmbedding does (cos.to(x.dtype)): for bf16 inputs the rotation coefficients carry bf16 error on top of the output rounding."""

from __future__ import annotations
import torch

_INT = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)

def _check_pos(p):
    if not isinstance(p, torch.Tensor) or p.dtype not in _INT:
        raise ValueError("positions must be an integer tensor")
    if p.numel() and (p < 0).any():
        raise ValueError("negative position")

def _angles(positions, head_dim, base, dt=torch.float32):
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 2 or head_dim % 2:
        raise ValueError("head_dim")
    if not base > 0:
        raise ValueError("base")
    _check_pos(positions)
    k = torch.arange(head_dim // 2, dtype=torch.float64, device=positions.device)
    inv = (float(base) ** (-2.0 * k / head_dim))
    return positions.to(torch.float64).unsqueeze(-1) * inv

def rope_cos_sin(positions, head_dim, base=10000.0):
    a = _angles(positions, head_dim, base)
    return torch.cos(a).to(torch.float32), torch.sin(a).to(torch.float32)

def apply_rope(x, positions, base=10000.0, interleaved=False):
    if not isinstance(x, torch.Tensor) or x.dim() != 4 or not x.is_floating_point():
        raise ValueError("x")
    B, H, L, D = x.shape
    if D % 2:
        raise ValueError("D odd")
    _check_pos(positions)
    if tuple(positions.shape) != (B, L):
        raise ValueError("positions shape")
    cdt = torch.float64 if x.dtype == torch.float64 else torch.float32
    a = _angles(positions, D, base)  # (B, L, D/2) float64
    c = torch.cos(a).to(x.dtype).to(cdt).unsqueeze(1)
    s = torch.sin(a).to(x.dtype).to(cdt).unsqueeze(1)
    xc = x.to(cdt)
    if interleaved:
        x1, x2 = xc[..., 0::2], xc[..., 1::2]
        y = torch.empty_like(xc)
        y[..., 0::2] = x1 * c - x2 * s
        y[..., 1::2] = x2 * c + x1 * s
    else:
        h = D // 2
        x1, x2 = xc[..., :h], xc[..., h:]
        y = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    return y.to(x.dtype)

def position_ids_from_mask(attention_mask):
    m = attention_mask
    if not isinstance(m, torch.Tensor) or m.dim() != 2:
        raise ValueError("mask 2-D")
    if m.is_floating_point() or m.is_complex():
        if not ((m == 0) | (m == 1)).all():
            raise ValueError("values")
    mi = m.to(torch.int64)
    if m.numel() and not ((mi == 0) | (mi == 1)).all():
        raise ValueError("values")
    if m.numel() and m.dtype != torch.bool and not ((m == 0) | (m == 1)).all():
        raise ValueError("values")
    pos = mi.cumsum(-1) - 1
    return torch.where(mi == 1, pos, torch.ones_like(pos))

def packed_positions(num_computed, num_scheduled, device="cpu"):
    if len(num_computed) != len(num_scheduled):
        raise ValueError("lengths")
    for x in list(num_computed) + list(num_scheduled):
        if isinstance(x, bool) or not isinstance(x, int) or x < 0:
            raise ValueError("ints >= 0")
    parts = [torch.arange(c, c + n, dtype=torch.int64) for c, n in zip(num_computed, num_scheduled)]
    out = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64)
    return out.to(device)
