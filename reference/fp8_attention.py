"""Reference: FP8 attention simulated in float64, with its three rounding points.

1. Q and K (and V) are cast to e4m3 with amax/448 scales: per tensor, per block of rows or per
   column. Large components of K carry large absolute errors into the logits; subtracting K's
   per-channel mean (exact under softmax) or rotating Q and K by an orthonormal Hadamard matrix
   (exact: (QH)(KH)^T = QK^T) changes what gets rounded.
2. The probability tile P~ = exp(S - m) lies in [0, 1], where e4m3 has little resolution and flushes
   everything below 2^-10 to zero; FlashAttention-3 multiplies it by 2^8 before the cast
   (hopper/softmax.h, Max_offset = 8) and sums the row from the unrounded values.
3. The accumulator: a low-precision register (e8m13, truncating) that FP32 promotion rescues.
Everything except the explicit FP8 casts is float64.
"""

from __future__ import annotations

import math

import torch

E4M3_MAX = 448.0
MODES = ("tensor", "block", "channel")
FIXES = ("channel_k_scale", "block_scales", "smooth_k", "hadamard", "hadamard_std", "scale_p")


def _matrix(x, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() != 2:
        raise ValueError(f"{name} must be a 2-D floating tensor")
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"{name} must not be empty")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} has NaN or infinite values")
    return x


def _e4m3(y: torch.Tensor) -> torch.Tensor:
    """Round float32 values to e4m3 (nearest, ties to even), saturating at +-448; float64 out."""
    return y.float().clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).double()


def fp8_quantize(x: torch.Tensor, mode: str = "tensor", block: int = 128) -> torch.Tensor:
    """Quantize-dequantize a (N, d) tensor to e4m3 with scale = amax / 448 (float32) per tensor,
    per `block` consecutive rows, or per column. A group whose amax is 0 uses scale 1."""
    _matrix(x, "x")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError("block must be an int >= 1")
    return _quantize(x, mode, block)


def _quantize(x: torch.Tensor, mode: str, block: int) -> torch.Tensor:
    xf = x.float()
    if mode == "tensor":
        amax = xf.abs().amax().reshape(1, 1)
    elif mode == "channel":
        amax = xf.abs().amax(dim=0, keepdim=True)                          # (1, d)
    else:
        n = xf.shape[0]
        amax = torch.stack([xf[i:i + block].abs().amax() for i in range(0, n, block)])
        amax = amax.repeat_interleave(block)[:n].reshape(n, 1)             # (N, 1)
    scale = amax / E4M3_MAX                                                 # float32
    scale = torch.where(amax > 0, scale, torch.ones_like(scale))
    return _e4m3(xf / scale) * scale.double()


def _hadamard(h, d: int, device) -> torch.Tensor:
    if not isinstance(h, torch.Tensor) or not h.is_floating_point() or tuple(h.shape) != (d, d):
        raise ValueError(f"hadamard must be a ({d}, {d}) floating tensor")
    h = h.to(device=device, dtype=torch.float64)
    eye = torch.eye(d, dtype=torch.float64, device=device)
    if not bool(torch.isfinite(h).all()) or float((h @ h.T - eye).abs().max()) > 1e-9:
        raise ValueError("hadamard must be orthonormal (H @ H.T == I within 1e-9)")
    return h


def _transform(q, k, smooth_k: bool, hadamard):
    """float64 Q and K after the optional K smoothing and the optional rotation of both."""
    q, k = q.double(), k.double()
    if q.shape[1] != k.shape[1]:
        raise ValueError("q and k must have the same head dim")
    if smooth_k:
        k = k - k.mean(dim=0, keepdim=True)
    if hadamard is not None:
        h = _hadamard(hadamard, q.shape[1], q.device)
        q, k = q @ h, k @ h
    return q, k


def fp8_attention_forward(q, k, v, *, qk_mode: str = "tensor", v_mode: str = "tensor",
                          block_k: int = 128, p_scale_log2: float = 8.0, l_source: str = "fp32",
                          smooth_k: bool = False, hadamard=None) -> torch.Tensor:
    """Tiled online-softmax attention (one head, no mask) with the FP8 points inserted."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        _matrix(t, name)
    if v.shape[0] != k.shape[0]:
        raise ValueError("k and v must have the same number of rows")
    if isinstance(block_k, bool) or not isinstance(block_k, int) or block_k < 1:
        raise ValueError("block_k must be an int >= 1")
    if l_source not in ("fp32", "fp8"):
        raise ValueError("l_source must be 'fp32' or 'fp8'")
    if (isinstance(p_scale_log2, bool) or not isinstance(p_scale_log2, (int, float))
            or not 0 <= p_scale_log2 <= math.log2(E4M3_MAX)):
        raise ValueError("p_scale_log2 must be a number in [0, log2(448)]")
    for name, m in (("qk_mode", qk_mode), ("v_mode", v_mode)):
        if m not in MODES:
            raise ValueError(f"{name} must be one of {MODES}")
    return _forward(q, k, v, qk_mode, v_mode, block_k, p_scale_log2, l_source, smooth_k, hadamard)


def _forward(q, k, v, qk_mode, v_mode, block_k, p_scale_log2, l_source, smooth_k, hadamard):
    sm_scale = 1.0 / math.sqrt(q.shape[1])
    qt, kt = _transform(q, k, smooth_k, hadamard)
    qd = _quantize(qt, qk_mode, block_k)
    kd = _quantize(kt, qk_mode, block_k)
    vd = _quantize(v, v_mode, block_k)
    p_mult = 2.0 ** p_scale_log2
    n_q, n_k = q.shape[0], k.shape[0]
    m = torch.full((n_q, 1), -math.inf, dtype=torch.float64, device=q.device)
    l = torch.zeros(n_q, 1, dtype=torch.float64, device=q.device)
    acc = torch.zeros(n_q, v.shape[1], dtype=torch.float64, device=q.device)
    for j in range(0, n_k, block_k):
        s = (qd @ kd[j:j + block_k].T) * sm_scale
        m_new = torch.maximum(m, s.amax(dim=1, keepdim=True))
        alpha = torch.exp(m - m_new)                     # 0 on the first tile (m = -inf)
        p = torch.exp(s - m_new) * p_mult                # P~ scaled, float64
        p8 = _e4m3(p)                                    # the FP8 operand of the PV product
        l = alpha * l + (p if l_source == "fp32" else p8).sum(dim=1, keepdim=True)
        acc = alpha * acc + p8 @ vd[j:j + block_k]
        m = m_new
    return acc / l                                       # the 2^c factor cancels


def logit_errors(q, k, *, qk_mode: str = "tensor", smooth_k: bool = False, hadamard=None,
                 block: int = 128) -> dict:
    """Errors of the FP8 logits against the exact logits of the same (transformed) operands:
    the plain (population) std over all entries, and the probability-weighted RMS error
    sqrt(mean_i sum_j p_ij e_ij^2) with p the exact softmax."""
    _matrix(q, "q")
    _matrix(k, "k")
    if qk_mode not in MODES:
        raise ValueError(f"qk_mode must be one of {MODES}")
    return _logit_errors(q, k, qk_mode, smooth_k, hadamard, block)


def _logit_errors(q, k, qk_mode="tensor", smooth_k=False, hadamard=None, block=128):
    sm_scale = 1.0 / math.sqrt(q.shape[1])
    qt, kt = _transform(q, k, smooth_k, hadamard)
    exact = (qt @ kt.T) * sm_scale
    approx = (_quantize(qt, qk_mode, block) @ _quantize(kt, qk_mode, block).T) * sm_scale
    e = approx - exact
    p = torch.softmax(exact, dim=1)
    return {"std": float(((e - e.mean()) ** 2).mean().sqrt()),
            "p_weighted": float((p * e ** 2).sum(dim=1).mean().sqrt())}


def _trunc_mant(x: torch.Tensor, mant_bits: int) -> torch.Tensor:
    """Round toward zero to `mant_bits` explicit mantissa bits."""
    m, e = torch.frexp(x)                                # x = m * 2^e, 0.5 <= |m| < 1
    step = 2.0 ** (mant_bits + 1)
    return torch.ldexp(torch.trunc(m * step) / step, e)


def lowprec_dot(a, b, mant_bits: int = 13, chunk: int = 4, promote: int | None = None) -> torch.Tensor:
    """sum(a * b) over the last axis through a truncating low-precision accumulator."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.dim() < 1:
            raise ValueError(f"{name} must be a floating tensor with at least one dimension")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} has NaN or infinite values")
    if a.shape != b.shape or a.shape[-1] < 1:
        raise ValueError("a and b must have the same shape, with a non-empty last axis")
    for name, x in (("mant_bits", mant_bits), ("chunk", chunk)):
        if isinstance(x, bool) or not isinstance(x, int) or x < 1:
            raise ValueError(f"{name} must be an int >= 1")
    if mant_bits > 52:
        raise ValueError("mant_bits must be <= 52")
    if promote is not None and (isinstance(promote, bool) or not isinstance(promote, int)
                                or promote < 1 or promote % chunk):
        raise ValueError("promote must be None or a positive multiple of chunk")
    prods = a.double() * b.double()
    n = prods.shape[-1]
    acc = torch.zeros(prods.shape[:-1], dtype=torch.float64, device=prods.device)
    outer = torch.zeros_like(acc)
    for i in range(0, n, chunk):
        end = min(i + chunk, n)
        acc = _trunc_mant(acc + prods[..., i:end].sum(dim=-1), mant_bits)
        if promote is not None and end % promote == 0:
            outer = outer + acc
            acc = torch.zeros_like(acc)
    return outer + acc


def _rel(o, truth) -> float:
    return float((o - truth).norm() / truth.norm())


def _gain(base: float, fixed: float) -> float:
    """baseline error / error with the fix; inf if only the fix is exact, 1.0 if both are."""
    if fixed == 0:
        return math.inf if base > 0 else 1.0
    return base / fixed


def fix_gains(q, k, v, hadamard) -> dict:
    """How much each fix cuts its point's error on these inputs (baseline error / fixed error).
    K-side fixes on the p-weighted logit error ('hadamard_std': the same rotation judged on the
    plain std); 'scale_p' on the relative output error with P unscaled (2^0) versus 2^8."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        _matrix(t, name)
    if k.shape[1] != q.shape[1] or v.shape[0] != k.shape[0]:
        raise ValueError("q, k, v shapes do not match")
    _hadamard(hadamard, q.shape[1], q.device)
    base = _logit_errors(q, k)
    had = _logit_errors(q, k, hadamard=hadamard)
    gains = {
        "channel_k_scale": _gain(base["p_weighted"], _logit_errors(q, k, qk_mode="channel")["p_weighted"]),
        "block_scales": _gain(base["p_weighted"], _logit_errors(q, k, qk_mode="block")["p_weighted"]),
        "smooth_k": _gain(base["p_weighted"], _logit_errors(q, k, smooth_k=True)["p_weighted"]),
        "hadamard": _gain(base["p_weighted"], had["p_weighted"]),
        "hadamard_std": _gain(base["std"], had["std"]),
    }
    qq, kk, vv = q.double(), k.double(), v.double()
    truth = torch.softmax((qq @ kk.T) / math.sqrt(q.shape[1]), dim=1) @ vv
    unscaled = _rel(_forward(q, k, v, "tensor", "tensor", 128, 0.0, "fp32", False, None), truth)
    scaled = _rel(_forward(q, k, v, "tensor", "tensor", 128, 8.0, "fp32", False, None), truth)
    gains["scale_p"] = _gain(unscaled, scaled)  # baseline: P unscaled (2^0); fix: 2^8
    return gains
