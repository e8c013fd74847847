"""WRONG: multiplies by the reciprocal 1 / scale instead of dividing by scale. Killed by quant-divide-not-reciprocal."""

from __future__ import annotations

import math

import torch

LAYOUTS = ("per_channel", "per_token")


def _check_float(name: str, x) -> None:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} holds NaN or inf")


def _check_int(name: str, v, lo: int, hi: int | None = None) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        raise ValueError(f"{name} must be an int in [{lo}, {hi if hi is not None else 'inf'}], got {v!r}")


def _grouped(x: torch.Tensor, group: int, layout: str) -> torch.Tensor:
    """View x (..., L, D) as (..., n_groups, group) along the quantized axis, groups last."""
    if layout == "per_token":                       # groups of `group` channels inside one token
        return x.reshape(*x.shape[:-1], x.shape[-1] // group, group)
    xt = x.transpose(-1, -2)                        # (..., D, L): groups of `group` tokens per channel
    return xt.reshape(*xt.shape[:-1], xt.shape[-1] // group, group)


def _ungrouped(xg: torch.Tensor, layout: str) -> torch.Tensor:
    x = xg.reshape(*xg.shape[:-2], xg.shape[-2] * xg.shape[-1])
    return x if layout == "per_token" else x.transpose(-1, -2)


def _params_shape(t: torch.Tensor, layout: str) -> torch.Tensor:
    """(..., rows, n_groups) -> the public scale/zero shape."""
    return t if layout == "per_token" else t.transpose(-1, -2)


def _validate_q(x, bits, group, layout) -> None:
    _check_float("x", x)
    if x.dim() < 2:
        raise ValueError("x must have at least 2 dimensions (..., L, D)")
    _check_int("bits", bits, 1, 8)
    _check_int("group", group, 1)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    n = x.shape[-1] if layout == "per_token" else x.shape[-2]
    if n == 0 or n % group:
        raise ValueError(f"the grouped axis has {n} elements, not a positive multiple of group={group}")


def quantize_groups(x: torch.Tensor, bits: int, group: int, layout: str):
    """Asymmetric min/max quantization in groups. Returns (codes uint8, scale f64, zero f64)."""
    _validate_q(x, bits, group, layout)
    qmax = 2 ** bits - 1
    xg = _grouped(x.to(torch.float64), group, layout)
    mn = xg.amin(-1, keepdim=True)
    mx = xg.amax(-1, keepdim=True)
    scale = (mx - mn) / qmax
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))   # a constant group: every code 0
    codes = torch.round(((xg - mn) * (1.0 / safe)).clamp(0, qmax))   # reciprocal: a tie can move
    codes = torch.where(scale > 0, codes, torch.zeros_like(codes))
    return (_ungrouped(codes, layout).to(torch.uint8),
            _params_shape(scale.squeeze(-1), layout), _params_shape(mn.squeeze(-1), layout))


def dequantize_groups(codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, group: int,
                      layout: str) -> torch.Tensor:
    """x_hat = code * scale + zero, per group; float64, the shape of codes."""
    _check_int("group", group, 1)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    cg = _grouped(codes.to(torch.float64), group, layout)
    s = _params_shape(scale.to(torch.float64), layout).unsqueeze(-1)
    z = _params_shape(zero.to(torch.float64), layout).unsqueeze(-1)
    return _ungrouped(cg * s + z, layout)


def _fake_quant(x: torch.Tensor, bits: int, group: int, layout: str) -> torch.Tensor:
    return dequantize_groups(*quantize_groups(x, bits, group, layout), group, layout)


def _nbytes(kq: int, kf: int, vq: int, vf: int, H: int, D: int, bits_k: int, bits_v: int,
            group: int) -> float:
    """Packed codes (bits/8 bytes per element), fp16 scale + fp16 zero (4 bytes) per group,
    fp16 residual (2 bytes per element)."""
    codes = (kq * bits_k + vq * bits_v) * H * D / 8
    groups = (kq // group) * H * D + vq * H * (D // group)
    return float(codes + 4 * groups + 2 * (kf + vf) * H * D)


def kivi_decode(k_prefill, v_prefill, q_steps, k_steps, v_steps, bits_k: int, bits_v: int,
                group: int, residual: int) -> dict:
    """Prefill then decode through a KIVI cache; see the statement for the exact order."""
    for name, t in (("k_prefill", k_prefill), ("v_prefill", v_prefill), ("q_steps", q_steps),
                    ("k_steps", k_steps), ("v_steps", v_steps)):
        _check_float(name, t)
    if k_prefill.dim() != 3 or v_prefill.shape != k_prefill.shape:
        raise ValueError("k_prefill and v_prefill must both be (H, L0, D)")
    H, L0, D = k_prefill.shape
    if L0 < 1 or H < 1 or D < 1:
        raise ValueError("prefill needs H, L0, D >= 1")
    if q_steps.dim() != 3 or q_steps.shape[1:] != (H, D) or k_steps.shape != q_steps.shape \
            or v_steps.shape != q_steps.shape:
        raise ValueError("q_steps, k_steps, v_steps must all be (S, H, D)")
    _check_int("bits_k", bits_k, 1, 8)
    _check_int("bits_v", bits_v, 1, 8)
    _check_int("group", group, 1)
    _check_int("residual", residual, 1)
    if D % group:
        raise ValueError(f"head_dim {D} is not a multiple of group {group}")
    if residual % group:
        raise ValueError(f"residual {residual} is not a multiple of group {group}")

    f64 = torch.float64
    k_all = torch.cat([k_prefill.to(f64), k_steps.to(f64).transpose(0, 1)], dim=1)   # (H, L, D)
    v_all = torch.cat([v_prefill.to(f64), v_steps.to(f64).transpose(0, 1)], dim=1)
    k_cache, v_cache = k_all.clone(), v_all.clone()      # what attention reads: decoded or full
    R = residual

    # prefill: keys keep L0 mod R full (all of them when L0 < R); values keep the last min(L0, R)
    kf = L0 % R if L0 >= R else L0
    kq = L0 - kf
    vf = min(L0, R)
    vq = L0 - vf
    if kq:
        k_cache[:, :kq] = _fake_quant(k_all[:, :kq], bits_k, group, "per_channel")
    if vq:
        v_cache[:, :vq] = _fake_quant(v_all[:, :vq], bits_v, group, "per_token")
    counts = [[kq, kf, vq, vf]]
    nbytes = [_nbytes(kq, kf, vq, vf, H, D, bits_k, bits_v, group)]

    outputs = []
    sm = 1.0 / math.sqrt(D)
    for s in range(q_steps.shape[0]):
        n = L0 + s + 1                                   # tokens in the cache after this append
        kf += 1
        vf += 1
        q = q_steps[s].to(f64)                           # (H, D)
        scores = torch.einsum("hd,hld->hl", q, k_cache[:, :n]) * sm
        p = torch.softmax(scores, dim=-1)
        outputs.append(torch.einsum("hl,hld->hd", p, v_cache[:, :n]))
        if kf == R:                                      # a whole residual of keys: quantize it
            k_cache[:, kq:kq + R] = _fake_quant(k_all[:, kq:kq + R], bits_k, group, "per_channel")
            kq, kf = kq + R, 0
        if vf > R:                                       # values: the oldest full token leaves
            v_cache[:, vq:vq + 1] = _fake_quant(v_all[:, vq:vq + 1], bits_v, group, "per_token")
            vq, vf = vq + 1, vf - 1
        counts.append([kq, kf, vq, vf])
        nbytes.append(_nbytes(kq, kf, vq, vf, H, D, bits_k, bits_v, group))

    S = q_steps.shape[0]
    out = torch.stack(outputs) if outputs else torch.zeros(0, H, D, dtype=f64)
    return {"outputs": out.to(q_steps.device), "counts": counts, "nbytes": nbytes,
            "k_hat": k_cache.to(q_steps.device), "v_hat": v_cache.to(q_steps.device)}


def _attend(q, k, v, sm_scale):
    p = torch.softmax((q @ k.T) * sm_scale, dim=-1)
    return p @ v, p


def error_roads(q, k, v, k_hat, v_hat, sm_scale: float) -> dict:
    """Relative output errors of K-only and V-only quantization and their first-order roads."""
    for name, t in (("q", q), ("k", k), ("v", v), ("k_hat", k_hat), ("v_hat", v_hat)):
        _check_float(name, t)
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D")
    if k.shape != v.shape or k_hat.shape != k.shape or v_hat.shape != v.shape or q.shape[1] != k.shape[1]:
        raise ValueError("shapes must be q (Q, D), k, v, k_hat, v_hat (L, D)")
    if isinstance(sm_scale, bool) or not isinstance(sm_scale, (int, float)) \
            or not math.isfinite(sm_scale) or sm_scale <= 0:
        raise ValueError("sm_scale must be a finite number > 0")
    f64 = torch.float64
    q, k, v, k_hat, v_hat = (t.to(f64) for t in (q, k, v, k_hat, v_hat))
    o, p = _attend(q, k, v, sm_scale)
    norm = o.norm()
    if norm == 0:
        raise ValueError("the exact output is zero: relative errors are undefined")
    o_k, _ = _attend(q, k_hat, v, sm_scale)
    o_v, _ = _attend(q, k, v_hat, sm_scale)
    ds = (q @ (k_hat - k).T) * sm_scale                  # (Q, L): logit errors
    pds = p * ds
    lin_k = pds @ v - pds.sum(-1, keepdim=True) * o      # sum_j p_j ds_j (v_j - o)
    lin_v = p @ (v_hat - v)                              # sum_j p_j dv_j
    ent = -(p * torch.log(p.clamp_min(1e-300))).sum(-1).mean()
    return {"k_only": float((o_k - o).norm() / norm), "v_only": float((o_v - o).norm() / norm),
            "k_linear": float(lin_k.norm() / norm), "v_linear": float(lin_v.norm() / norm),
            "entropy": float(ent)}
