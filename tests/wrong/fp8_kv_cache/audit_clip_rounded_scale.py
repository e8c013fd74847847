"""WRONG: clips where |x| > 448 * (amax / div), against the float64-rounded scale: at div 448 it clips the calibration maximum itself. Killed by audit-div-448-amax-does-not-clip."""


from __future__ import annotations

import math

import torch

FORMATS = {  # name: (torch dtype, largest finite value)
    "e4m3": (torch.float8_e4m3fn, 448.0),
    "e5m2": (torch.float8_e5m2, 57344.0),
}
MAX_READ = 4096  # tokens per stream.read call


def _format(fmt: str):
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {sorted(FORMATS)}, got {fmt!r}")
    return FORMATS[fmt]


def _scale(scale, shape: torch.Size, device: torch.device, what: str = "scale") -> torch.Tensor:
    """The scale as a float32 tensor broadcastable to ``shape``; positive and finite."""
    if isinstance(scale, torch.Tensor):
        if not scale.is_floating_point():
            raise ValueError(f"{what} must be a floating tensor, got {scale.dtype}")
        s = scale.detach().to(device=device, dtype=torch.float32)
    elif isinstance(scale, (int, float)) and not isinstance(scale, bool):
        s = torch.tensor(float(scale), dtype=torch.float32, device=device)
    else:
        raise ValueError(f"{what} must be a number or a float tensor, got {type(scale).__name__}")
    try:
        ok_shape = torch.broadcast_shapes(s.shape, shape) == shape
    except RuntimeError:
        ok_shape = False
    if not ok_shape:
        raise ValueError(f"{what} of shape {tuple(s.shape)} does not broadcast to {tuple(shape)}")
    if not bool(torch.isfinite(s).all()) or not bool((s > 0).all()):
        raise ValueError(f"{what} must be positive and finite (after rounding to float32)")
    return s


def fp8_encode(x: torch.Tensor, scale, fmt: str = "e4m3") -> torch.Tensor:
    """x (any shape, floating) -> uint8 codes: round_to_fp8(clamp(x / scale, -max, max))."""
    dtype, fmax = _format(fmt)
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise ValueError("x must be a floating-point tensor")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x has NaN or infinite values")
    s = _scale(scale, x.shape, x.device)
    y = (x.float() / s).clamp(-fmax, fmax)
    return y.to(dtype).view(torch.uint8)


def _fp8_values(codes: torch.Tensor, fmt: str) -> torch.Tensor:
    """The FP8 values of uint8 codes as float32; NaN/inf codes are rejected."""
    dtype, _ = _format(fmt)
    if not isinstance(codes, torch.Tensor) or codes.dtype != torch.uint8:
        raise ValueError("codes must be a torch.uint8 tensor")
    vals = codes.view(dtype).float()
    if not bool(torch.isfinite(vals).all()):
        raise ValueError("codes hold a NaN or infinity encoding")
    return vals


def fp8_decode(codes: torch.Tensor, scale, fmt: str = "e4m3") -> torch.Tensor:
    """uint8 codes -> float32 values: fp8_value(code) * scale."""
    vals = _fp8_values(codes, fmt)
    return vals * _scale(scale, codes.shape, codes.device)


def _head_scale(scale, h_kv: int, device, what: str) -> torch.Tensor:
    """A per-tensor or per-KV-head scale as a float32 vector of length h_kv."""
    if isinstance(scale, torch.Tensor) and scale.dim() > 1:
        raise ValueError(f"{what} must be a number, a 0-d tensor or a ({h_kv},) tensor")
    s = _scale(scale, torch.Size([h_kv]), device, what)
    return s.expand(h_kv)


def fp8_decode_attention(q: torch.Tensor, k_codes: torch.Tensor, v_codes: torch.Tensor, k_scale,
                         v_scale, fmt: str = "e4m3", sm_scale: float | None = None) -> torch.Tensor:
    """One decode query per sequence against an FP8 cache.

    q: (B, H_q, D); k_codes, v_codes: (B, H_kv, L, D) uint8. Query head h reads KV head
    h // (H_q // H_kv). Scales folded as FlashInfer does: logits = q . k8 * (sm_scale * k_scale),
    out = (softmax @ v8) * v_scale. float32 math; returns float32 (B, H_q, D).
    """
    if not isinstance(q, torch.Tensor) or not q.is_floating_point() or q.dim() != 3:
        raise ValueError("q must be a floating tensor of shape (B, H_q, D)")
    if not bool(torch.isfinite(q).all()):
        raise ValueError("q has NaN or infinite values")
    for name, c in (("k_codes", k_codes), ("v_codes", v_codes)):
        if not isinstance(c, torch.Tensor) or c.dtype != torch.uint8 or c.dim() != 4:
            raise ValueError(f"{name} must be a torch.uint8 tensor of shape (B, H_kv, L, D)")
    b, h_q, d = q.shape
    if k_codes.shape != v_codes.shape:
        raise ValueError("k_codes and v_codes must have the same shape")
    bk, h_kv, length, dk = k_codes.shape
    if bk != b or dk != d or length < 1 or h_kv < 1:
        raise ValueError(f"cache shape {tuple(k_codes.shape)} does not match q {tuple(q.shape)}")
    if h_q % h_kv:
        raise ValueError(f"H_q={h_q} is not a multiple of H_kv={h_kv}")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(d)
    elif (isinstance(sm_scale, bool) or not isinstance(sm_scale, (int, float))
          or not math.isfinite(sm_scale) or sm_scale <= 0):
        raise ValueError("sm_scale must be a positive finite number or None")
    ks = _head_scale(k_scale, h_kv, q.device, "k_scale")
    vs = _head_scale(v_scale, h_kv, q.device, "v_scale")
    k8 = _fp8_values(k_codes, fmt)  # (B, H_kv, L, D), float32, scales not applied yet
    v8 = _fp8_values(v_codes, fmt)
    group = h_q // h_kv
    kv_head = torch.arange(h_q, device=q.device) // group      # query head -> its KV head
    k8, v8 = k8[:, kv_head], v8[:, kv_head]                     # (B, H_q, L, D)
    logit_mult = (float(sm_scale) * ks.double()).float()[kv_head]   # (H_q,)
    logits = torch.einsum("bhd,bhld->bhl", q.float(), k8) * logit_mult[None, :, None]
    p = torch.softmax(logits, dim=-1)
    out = torch.einsum("bhl,bhld->bhd", p, v8)
    return out * vs[kv_head][None, :, None]


# -- the long-context clipping audit ---------------------------------------------------------------

def _read_all(stream, start: int, end: int):
    """Yield (position of the chunk's first token, k, v) over [start, end) in chunks of MAX_READ."""
    for a in range(start, end, MAX_READ):
        b = min(a + MAX_READ, end)
        k, v = stream.read(a, b)
        yield a, k, v


def audit_long_context(stream, calib_start: int, calib_end: int, k_div: float = 200.0,
                       v_div: float = 100.0, per_head: bool = False) -> dict:
    """Scales from tokens [calib_start, calib_end) (amax / div), then the tokens of the whole
    stream that those scales clip: a token clips if any element of any head has
    |x| * div > 448 * amax (exact in float64 for integer divs)."""
    length = stream.length
    for name, v in (("calib_start", calib_start), ("calib_end", calib_end)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{name} must be an int")
    if not 0 <= calib_start < calib_end <= length:
        raise ValueError(f"need 0 <= calib_start < calib_end <= length={length}")
    for name, v in (("k_div", k_div), ("v_div", v_div)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a positive finite number")
    fmax = FORMATS["e4m3"][1]
    h = stream.num_kv_heads
    amax = {"k": torch.zeros(h, dtype=torch.float64), "v": torch.zeros(h, dtype=torch.float64)}
    for _, k, v in _read_all(stream, calib_start, calib_end):
        for key, t in (("k", k), ("v", v)):
            amax[key] = torch.maximum(amax[key], t.detach().cpu().double().abs().amax(dim=(0, 2)))
    if not per_head:
        amax = {key: a.max().expand(h) for key, a in amax.items()}
    if any(bool((a == 0).any()) for a in amax.values()):
        raise ValueError("the calibration window has an all-zero tensor (its scale would be 0)")
    div = {"k": float(k_div), "v": float(v_div)}
    first = {"k": None, "v": None}
    count = {"k": 0, "v": 0}
    for a, k, v in _read_all(stream, 0, length):
        for key, t in (("k", k), ("v", v)):
            peak = t.detach().cpu().abs().amax(dim=2).double()       # (n, H): the largest |x|
            clips = (peak > fmax * (amax[key] / div[key])[None, :]).any(dim=1)
            n = int(clips.sum())
            if n and first[key] is None:
                first[key] = a + int(clips.nonzero()[0, 0])
            count[key] += n
    out = {}
    for key in ("k", "v"):
        scales = [float(x) / div[key] for x in amax[key]]
        out[f"{key}_scale"] = scales if per_head else scales[0]
    for key in ("k", "v"):
        out[f"{key}_first_clipped"] = first[key]
        out[f"{key}_clipped_tokens"] = count[key]
    return out
