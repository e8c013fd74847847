"""Wrong: everything is in float64 except the greedy decision, which takes the argmax of the logits cast to
float32 (as engines that keep logits in float32 do). Float64 logits 1e-12 apart round to one float32
value, and the tie goes to the first index: [1, 1 + 1e-12, 0.5] gives token 0 instead of 1. It passed
while no hidden greedy row had logits closer than float32 can tell apart."""

from __future__ import annotations

import math

import torch

KNOBS = ("temperature", "top_k", "top_p", "min_p")
DEFAULT_ORDER = KNOBS  # Hugging Face `generate` order (temperature -> top-k -> top-p -> min-p)

_REAL_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def sampling_probs(logits: torch.Tensor, temperature, top_k, top_p, min_p=0.0,
                   order=DEFAULT_ORDER) -> torch.Tensor:
    """The distribution the knobs leave, as probs: (B, V) float32 on logits.device."""
    probs, _ = _probs64(logits, temperature, top_k, top_p, min_p, order)
    return probs.to(torch.float32)


def sample(logits: torch.Tensor, temperature, top_k, top_p, min_p=0.0, order=DEFAULT_ORDER,
           generator: torch.Generator | None = None) -> torch.Tensor:
    """One token id per row, ids: (B,) int64 on logits.device, drawn from sampling_probs."""
    probs, greedy = _probs64(logits, temperature, top_k, top_p, min_p, order)
    if probs.shape[0] == 0:
        return torch.empty(0, dtype=torch.int64, device=probs.device)
    drawn = torch.multinomial(probs, 1, generator=generator).squeeze(1)
    return torch.where(greedy, probs.argmax(dim=-1), drawn)   # a greedy row is a one-hot


# -- the four knobs, each on the current (B, V) float64 logits --------------------------------------

def _temperature(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    # Shift by the row max first: softmax does not change, and (x - max) / t cannot overflow to
    # +inf for a tiny t (it may go to -inf, which is a probability of exactly 0 anyway).
    x = x - x.max(dim=-1, keepdim=True).values
    return x / t[:, None]


def _top_k(x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    V = x.shape[-1]
    active = (k > 0) & (k < V)
    kth = x.sort(dim=-1, descending=True).values.gather(-1, (k.clamp(1, V) - 1)[:, None])
    return x.masked_fill(active[:, None] & (x < kth), -math.inf)   # ties with the k-th all stay


def _top_p(x: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    V = x.shape[-1]
    s, idx = x.sort(dim=-1, descending=True)
    ps = s.softmax(dim=-1)
    before = ps.cumsum(dim=-1) - ps                       # mass of the tokens sorted before this one
    # A tie group takes the mass before its first member: mass of the strictly more probable tokens.
    pos = torch.arange(V, device=x.device).expand_as(s)
    starts = torch.ones_like(s, dtype=torch.bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    first = torch.where(starts, pos, 0).cummax(dim=-1).values
    keep_sorted = before.gather(-1, first) < p[:, None]
    keep = torch.empty_like(keep_sorted).scatter_(-1, idx, keep_sorted)
    active = p < 1.0
    return x.masked_fill(active[:, None] & ~keep, -math.inf)


def _min_p(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    probs = x.softmax(dim=-1)
    threshold = m[:, None] * probs.max(dim=-1, keepdim=True).values
    return x.masked_fill(probs < threshold, -math.inf)


def _probs64(logits, temperature, top_k, top_p, min_p, order):
    x, t, k, p, m, order = _validate(logits, temperature, top_k, top_p, min_p, order)
    B, V = x.shape
    greedy = t == 0
    if B == 0:
        return x.clone(), greedy
    for knob in order:
        if knob == "temperature":
            x = _temperature(x, torch.where(greedy, 1.0, t))
        elif knob == "top_k":
            x = _top_k(x, k)
        elif knob == "top_p":
            x = _top_p(x, p)
        else:
            x = _min_p(x, m)
    probs = x.softmax(dim=-1)
    return torch.where(greedy[:, None], _first_argmax_one_hot(logits.to(torch.float32)).double(), probs), greedy


def _first_argmax_one_hot(z: torch.Tensor) -> torch.Tensor:
    """One-hot on the lowest index of each row's maximum (spelled out: argmax's tie rule is not
    something to lean on across devices)."""
    V = z.shape[-1]
    pos = torch.arange(V, device=z.device).expand_as(z)
    first = torch.where(z == z.max(dim=-1, keepdim=True).values, pos, V).min(dim=-1).values
    return torch.nn.functional.one_hot(first, V).to(torch.float64)


# -- validation ---------------------------------------------------------------------------------------

def _validate(logits, temperature, top_k, top_p, min_p, order):
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2:
        raise ValueError("logits must be a 2-D tensor (B, V)")
    if logits.dtype not in _REAL_DTYPES:
        raise ValueError(f"logits must be float16, bfloat16, float32 or float64, not {logits.dtype}")
    x = logits.to(torch.float64)
    B, V = x.shape
    if torch.isnan(x).any() or (x == math.inf).any():
        raise ValueError("logits must be finite or -inf (no NaN, no +inf)")
    if B > 0 and not (x > -math.inf).any(dim=-1).all():
        raise ValueError("every row of logits needs at least one finite value")
    dev = x.device
    t = _knob(temperature, "temperature", B, dev, integer=False)
    k = _knob(top_k, "top_k", B, dev, integer=True)
    p = _knob(top_p, "top_p", B, dev, integer=False)
    m = _knob(min_p, "min_p", B, dev, integer=False)
    if not (torch.isfinite(t) & (t >= 0)).all():
        raise ValueError("temperature must be finite and >= 0")
    if not ((p > 0) & (p <= 1)).all():
        raise ValueError("top_p must be in (0, 1]")
    if not ((m >= 0) & (m <= 1)).all():
        raise ValueError("min_p must be in [0, 1]")
    if (not isinstance(order, (tuple, list)) or len(order) != len(KNOBS)
            or not all(isinstance(o, str) for o in order) or sorted(order) != sorted(KNOBS)):
        raise ValueError(f"order must be a permutation of {KNOBS}, got {order!r}")
    return x, t, k, p, m, tuple(order)


def _knob(value, name: str, B: int, device, *, integer: bool) -> torch.Tensor:
    """A scalar or a per-row 1-D tensor -> (B,) float64 (int64 for top_k) on device."""
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool or value.is_complex():
            raise ValueError(f"{name} must be a real number, not a {value.dtype} tensor")
        if integer and value.is_floating_point():
            raise ValueError(f"{name} must be an integer tensor, not {value.dtype}")
        if value.dim() == 0:
            value = value.expand(B)
        elif value.dim() != 1 or value.shape[0] != B:
            raise ValueError(f"{name} must be a scalar or a 1-D tensor of length B={B}, "
                             f"got shape {tuple(value.shape)}")
        return value.to(device=device, dtype=torch.int64 if integer else torch.float64)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a Python number or a 1-D tensor, not {type(value).__name__}")
    if integer:
        if not isinstance(value, int):
            raise ValueError(f"{name} must be an int, not {value!r}")
        value = 0 if value <= 0 else min(value, 2**62)   # any k <= 0 or >= V disables top-k
        return torch.full((B,), value, dtype=torch.int64, device=device)
    return torch.full((B,), float(value), dtype=torch.float64, device=device)
