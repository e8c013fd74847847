"""WRONG: computes angles, cos/sin and the rotation in float32 for every input, float64 included, and casts
the result back; the statement asks for float64 arithmetic for float64 inputs. It used to pass because the
float64 cases had the float32 tolerance."""


from __future__ import annotations

import torch


def _check_positions(positions):
    if not isinstance(positions, torch.Tensor) or positions.dtype.is_floating_point or positions.dtype == torch.bool \
            or positions.is_complex():
        raise ValueError("positions must be an integer tensor")
    if positions.numel() and int(positions.min()) < 0:
        raise ValueError("positions must be >= 0")


def rope_cos_sin(positions, head_dim, base=10000.0, dtype=torch.float32):
    _check_positions(positions)
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 2 or head_dim % 2:
        raise ValueError(f"head_dim must be an even int >= 2, got {head_dim!r}")
    if not base > 0:
        raise ValueError(f"base must be > 0, got {base!r}")
    dev = positions.device
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=dev, dtype=dtype) / head_dim))
    angles = positions.to(dtype)[..., None] * inv_freq
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, positions, base=10000.0, interleaved=False):
    if not isinstance(x, torch.Tensor) or x.dim() != 4 or not x.dtype.is_floating_point:
        raise ValueError("x must be a floating (B, H, L, D) tensor")
    b, _, l, d = x.shape
    if d % 2:
        raise ValueError(f"head_dim must be even, got {d}")
    _check_positions(positions)
    if tuple(positions.shape) != (b, l):
        raise ValueError(f"positions must have shape {(b, l)}, got {tuple(positions.shape)}")
    work = torch.float32
    cos, sin = rope_cos_sin(positions, d, base, dtype=work)      # (B, L, D/2)
    cos, sin = cos[:, None], sin[:, None]                        # broadcast over heads
    xf = x.to(work)
    if interleaved:
        x1, x2 = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2)
    else:
        x1, x2 = xf[..., : d // 2], xf[..., d // 2:]
        out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return out.to(x.dtype)


def position_ids_from_mask(attention_mask):
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.dim() != 2:
        raise ValueError("attention_mask must be a 2-D (B, L) tensor")
    if attention_mask.is_complex() or ((attention_mask != 0) & (attention_mask != 1)).any():   # NaN, 0.5 included
        raise ValueError("attention_mask must hold only 0 and 1")
    m = attention_mask.to(torch.int64)
    pos = m.cumsum(-1) - 1
    return pos.masked_fill(m == 0, 1)


def packed_positions(num_computed, num_scheduled, device="cpu"):
    if not isinstance(num_computed, (list, tuple)) or not isinstance(num_scheduled, (list, tuple)):
        raise ValueError("num_computed and num_scheduled must be lists of ints")
    if len(num_computed) != len(num_scheduled):
        raise ValueError("num_computed and num_scheduled must have one length")
    parts = []
    for c, n in zip(num_computed, num_scheduled):
        if isinstance(c, bool) or isinstance(n, bool) or not isinstance(c, int) or not isinstance(n, int) or c < 0 or n < 0:
            raise ValueError("token counts must be ints >= 0")
        parts.append(torch.arange(c, c + n, dtype=torch.int64, device=device))
    if not parts:
        return torch.zeros(0, dtype=torch.int64, device=device)
    return torch.cat(parts)
