"""WRONG: casts router logits to float32 before the top-k, so float64 near-ties collapse to ties won by the lower id. Killed by counts-f64-near-ties."""

from __future__ import annotations

import math

import torch

ACTIONS = ["gptq", "gptq_targeted", "rtn"]
WIN_MARGIN = 1e-6          # GPTQ "wins" at n when its error is below (1 - 1e-6) x RTN's


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# ---------------------------------------------------------------- tokens reaching each expert
def expert_token_counts(router_logits: torch.Tensor, top_k: int) -> list[int]:
    """Tokens routed to each expert: every row picks its top_k largest logits, ties to the lower id."""
    if not isinstance(router_logits, torch.Tensor) or router_logits.dim() != 2 \
            or not router_logits.dtype.is_floating_point:
        raise ValueError("router_logits must be a 2-D floating tensor (tokens, experts)")
    n, e = router_logits.shape
    if not _is_int(top_k) or not 1 <= top_k <= e:
        raise ValueError("top_k must be an int in [1, num_experts]")
    if torch.isnan(router_logits).any():
        raise ValueError("router_logits contains NaN")
    order = torch.sort(router_logits.float(), dim=1, descending=True, stable=True).indices[:, :top_k]
    return torch.bincount(order.reshape(-1).cpu(), minlength=e).tolist()


def expected_tokens(routing_share: list[float], num_tokens: int, top_k: int) -> dict:
    """routing_share[e]: fraction of all routing slots that go to expert e (sums to 1).
    A token selects e with probability top_k * share; tokens are independent."""
    if not isinstance(routing_share, (list, tuple)) or not routing_share:
        raise ValueError("routing_share must be a non-empty list of floats")
    pi = [float(p) for p in routing_share]
    if any(not math.isfinite(p) or p < 0 for p in pi) or abs(math.fsum(pi) - 1.0) > 1e-9:
        raise ValueError("routing_share must be finite, >= 0 and sum to 1")
    if not _is_int(num_tokens) or num_tokens < 0:
        raise ValueError("num_tokens must be an int >= 0")
    if not _is_int(top_k) or not 1 <= top_k <= len(pi):
        raise ValueError("top_k must be an int in [1, num_experts]")
    if any(top_k * p > 1.0 for p in pi):
        raise ValueError("top_k * routing_share[e] is a probability: it cannot exceed 1")
    return {"expected": [num_tokens * top_k * p for p in pi],
            "p_zero": [(1.0 - top_k * p) ** num_tokens for p in pi]}


# ---------------------------------------------------------------- the quantizers
def _grid(W: torch.Tensor, bits: int):
    """GPTQ's Quantizer.find_params(perchannel=True, sym=False): per output row, the range
    [min(w_min, 0), max(w_max, 0)] (an all-zero row uses [-1, 1]) on 2^bits - 1 steps."""
    maxq = 2 ** bits - 1
    zeros = torch.zeros(W.shape[0], dtype=W.dtype, device=W.device)
    xmin = torch.minimum(W.min(1).values, zeros)
    xmax = torch.maximum(W.max(1).values, zeros)
    both = (xmin == 0) & (xmax == 0)
    xmin[both], xmax[both] = -1.0, 1.0
    scale = (xmax - xmin) / maxq
    zero = torch.round(-xmin / scale)
    return scale, zero, maxq


def _quant(w: torch.Tensor, scale, zero, maxq) -> torch.Tensor:
    q = torch.clamp(torch.round(w / scale) + zero, 0, maxq)
    return scale * (q - zero)


def _check_w(W, bits):
    if not isinstance(W, torch.Tensor) or W.dim() != 2 or not W.dtype.is_floating_point or W.numel() == 0:
        raise ValueError("W must be a non-empty 2-D floating tensor (d_out, d_in)")
    if not torch.isfinite(W).all():
        raise ValueError("W must be finite")
    if not _is_int(bits) or not 2 <= bits <= 8:
        raise ValueError("bits must be an int in [2, 8]")


def rtn_quantize(W: torch.Tensor, bits: int) -> torch.Tensor:
    """Round-to-nearest on GPTQ's grid; float64 (d_out, d_in) on W's device."""
    _check_w(W, bits)
    W = W.to(torch.float64)
    scale, zero, maxq = _grid(W, bits)
    return _quant(W, scale[:, None], zero[:, None], maxq)


def gptq_quantize(W: torch.Tensor, X: torch.Tensor, bits: int, percdamp: float = 0.01,
                  blocksize: int = 128, act_order: bool = False) -> torch.Tensor:
    """GPTQ (IST-DASLab/gptq, GPTQ.fasterquant, groupsize -1) in float64.
    X: (n, d_in) calibration inputs of this layer. No rows, or all-zero X: round-to-nearest."""
    _check_w(W, bits)
    if not isinstance(X, torch.Tensor) or X.dim() != 2 or not X.dtype.is_floating_point \
            or X.shape[1] != W.shape[1]:
        raise ValueError("X must be a 2-D floating tensor (n, d_in) with W's d_in")
    if not torch.isfinite(X).all():
        raise ValueError("X must be finite")
    if isinstance(percdamp, bool) or not isinstance(percdamp, (int, float)) or not percdamp > 0 \
            or not math.isfinite(percdamp):
        raise ValueError("percdamp must be a finite number > 0")
    if not _is_int(blocksize) or blocksize < 1:
        raise ValueError("blocksize must be an int >= 1")
    if not isinstance(act_order, bool):
        raise ValueError("act_order must be a bool")
    W = W.to(torch.float64).clone()
    X = X.to(torch.float64)
    n, d = X.shape
    if n == 0 or not X.any():
        return rtn_quantize(W, bits)                       # nothing to weigh errors with: fall back
    scale, zero, maxq = _grid(W, bits)                     # grid from W before anything changes
    H = 2.0 * X.T @ X / n
    dead = torch.diag(H) == 0
    H[dead, dead] = 1.0
    W[:, dead] = 0.0
    if act_order:
        perm = torch.argsort(torch.diag(H), descending=True, stable=True)
        W, H = W[:, perm], H[perm][:, perm]
    H = H + percdamp * torch.mean(torch.diag(H)) * torch.eye(d, dtype=H.dtype, device=H.device)
    Hinv = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)
    Q = torch.zeros_like(W)
    for i1 in range(0, d, blocksize):
        i2 = min(i1 + blocksize, d)
        W1 = W[:, i1:i2].clone()
        Err1 = torch.zeros_like(W1)
        for i in range(i2 - i1):
            w, dd = W1[:, i], Hinv[i1 + i, i1 + i]
            q = _quant(w, scale, zero, maxq)
            Q[:, i1 + i] = q
            err = (w - q) / dd
            W1[:, i:] -= err[:, None] * Hinv[i1 + i, i1 + i:i2][None, :]
            Err1[:, i] = err
        W[:, i2:] -= Err1 @ Hinv[i1:i2, i2:]
    if act_order:
        Q = Q[:, torch.argsort(perm)]
    return Q


# ---------------------------------------------------------------- where GPTQ loses to RTN
def _rel_err(W, Wq, X_test) -> float:
    return float(torch.linalg.norm(X_test @ (W - Wq).T) / torch.linalg.norm(X_test @ W.T))


def gptq_vs_rtn(W: torch.Tensor, X_calib: torch.Tensor, X_test: torch.Tensor, token_grid: list[int],
                bits: int, percdamp: float) -> dict:
    """Mean relative output error of GPTQ calibrated on the first n rows of every draw of X_calib,
    for every n in token_grid, against RTN; the smallest n whose error is below RTN's."""
    _check_w(W, bits)
    if not isinstance(X_calib, torch.Tensor) or X_calib.dim() != 3 or X_calib.shape[0] < 1 \
            or X_calib.shape[2] != W.shape[1]:
        raise ValueError("X_calib must be (draws >= 1, N, d_in)")
    if not isinstance(X_test, torch.Tensor) or X_test.dim() != 2 or X_test.shape[1] != W.shape[1] \
            or X_test.shape[0] < 1:
        raise ValueError("X_test must be (m >= 1, d_in)")
    if not isinstance(token_grid, (list, tuple)) or not token_grid \
            or any(not _is_int(t) for t in token_grid) \
            or any(b <= a for a, b in zip(token_grid, token_grid[1:])) \
            or token_grid[0] < 0 or token_grid[-1] > X_calib.shape[1]:
        raise ValueError("token_grid must be a strictly increasing list of ints in [0, N]")
    W = W.to(torch.float64)
    X_test = X_test.to(torch.float64)
    if not torch.linalg.norm(X_test @ W.T) > 0:
        raise ValueError("X_test @ W.T is zero: the relative error is undefined")
    rtn = _rel_err(W, rtn_quantize(W, bits), X_test)
    errs = []
    for n in token_grid:
        if n == 0:
            errs.append(rtn)                               # no tokens: the fallback is RTN itself
            continue
        draws = [_rel_err(W, gptq_quantize(W, X_calib[r, :n], bits, percdamp), X_test)
                 for r in range(X_calib.shape[0])]
        errs.append(math.fsum(draws) / len(draws))
    cross = next((n for n, e in zip(token_grid, errs) if e < (1.0 - WIN_MARGIN) * rtn), None)
    return {"rtn_error": rtn, "gptq_errors": errs, "crossover": cross}


# ---------------------------------------------------------------- a plan that guarantees coverage
def calibration_plan(routed_counts: list[int], targeted_counts: list[int], d_in: int,
                     min_tokens_per_dim: float) -> list[str]:
    """Per expert: 'gptq' if its routed tokens reach min_tokens_per_dim * d_in; else
    'gptq_targeted' if routed + targeted do; else 'rtn'."""
    if not isinstance(routed_counts, (list, tuple)) or not isinstance(targeted_counts, (list, tuple)) \
            or len(routed_counts) != len(targeted_counts) or not routed_counts:
        raise ValueError("routed_counts and targeted_counts must be non-empty lists of equal length")
    if any(not _is_int(c) or c < 0 for c in list(routed_counts) + list(targeted_counts)):
        raise ValueError("token counts must be ints >= 0")
    if not _is_int(d_in) or d_in < 1:
        raise ValueError("d_in must be an int >= 1")
    if isinstance(min_tokens_per_dim, bool) or not isinstance(min_tokens_per_dim, (int, float)) \
            or not math.isfinite(min_tokens_per_dim) or min_tokens_per_dim <= 0:
        raise ValueError("min_tokens_per_dim must be a finite number > 0")
    need = min_tokens_per_dim * d_in
    plan = []
    for r, t in zip(routed_counts, targeted_counts):
        plan.append("gptq" if r >= need else "gptq_targeted" if r + t >= need else "rtn")
    return plan
