"""WRONG: cross_talk quantizes every victim together with the companions (cat([victims, companions])), so the other victims move a per-tensor scale too. Killed by cross-talk-int8_tensor-no-companions and cross-talk-fp8_tensor-no-companions (either comes first, by the salt)."""

from __future__ import annotations

import torch

MODES = ("none", "int8_tensor", "int8_token", "fp8_tensor", "fp8_token")
QMAX = {"int8": 127.0, "fp8": 448.0}


def _check_x(name: str, x, dim: int = 2) -> None:
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
        raise ValueError(f"{name} must be a float32 tensor")
    if x.dim() != dim:
        raise ValueError(f"{name} must be {dim}-D, got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} holds NaN or inf")


def _check_mode(mode) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


def _quantize(x: torch.Tensor, mode: str) -> torch.Tensor:
    if mode == "none":
        return x.clone()
    kind, granularity = mode.split("_")
    qmax = QMAX[kind]
    if granularity == "tensor":
        amax = x.abs().amax().reshape(1, 1)            # one scale for every row of the batch
    else:
        amax = x.abs().amax(dim=1, keepdim=True)       # one scale per row (token)
    scale = amax / qmax                                # float32
    scale = torch.where(amax > 0, scale, torch.ones_like(scale))   # an all-zero row: scale 1
    y = (x / scale).clamp(-qmax, qmax)                 # divide, then saturate before any cast
    if kind == "int8":
        code = torch.round(y)                          # half to even
    else:
        code = y.to(torch.float8_e4m3fn).to(torch.float32)   # round to nearest even
    return code * scale


def quantize_activations(x: torch.Tensor, mode: str) -> torch.Tensor:
    """Dynamic symmetric quantization of a batch of activations (T, H); returns x_hat float32."""
    _check_x("x", x)
    _check_mode(mode)
    return _quantize(x, mode)


def quantized_linear(x: torch.Tensor, w: torch.Tensor, mode: str) -> torch.Tensor:
    """out = quantize_activations(x, mode) @ w.T in float32, one row at a time: a row's result
    never depends on the other rows' presence (its scale does, under a per-tensor mode)."""
    _check_x("x", x)
    _check_x("w", w)
    _check_mode(mode)
    if x.shape[1] != w.shape[1]:
        raise ValueError(f"x has {x.shape[1]} features, w expects {w.shape[1]}")
    x_hat = _quantize(x, mode)
    wt = w.T.contiguous()
    rows = [x_hat[i:i + 1] @ wt for i in range(x_hat.shape[0])]   # same shape, same kernel, always
    return torch.cat(rows) if rows else torch.zeros(0, w.shape[0], device=x.device)


def _logits64(x_hat_row: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return w.to(torch.float64) @ x_hat_row.to(torch.float64)


def cross_talk(victims: torch.Tensor, companions: torch.Tensor, w: torch.Tensor, mode: str) -> dict:
    """For each victim row: logits alone (a batch of 1) versus first in the batch
    [victim, companions...]; logits in float64 from the float32 x_hat."""
    _check_x("victims", victims)
    _check_x("companions", companions)
    _check_x("w", w)
    _check_mode(mode)
    if victims.shape[0] < 1:
        raise ValueError("need at least one victim")
    if victims.shape[1] != w.shape[1] or companions.shape[1] != w.shape[1]:
        raise ValueError("victims, companions and w must share the feature dimension")
    worst, flips = 0.0, 0
    for i in range(victims.shape[0]):
        v = victims[i:i + 1]
        alone = _logits64(_quantize(v, mode)[0], w)
        batched = _logits64(_quantize(torch.cat([victims, companions]), mode)[i], w)
        denom = float(alone.abs().max())
        change = float((batched - alone).abs().max())
        if change > 0:
            worst = max(worst, change / denom if denom > 0 else float("inf"))
        flips += int(int(alone.argmax()) != int(batched.argmax()))
    return {"max_rel_change": worst, "flips": flips}
