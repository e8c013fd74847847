"""Wrong (input checks): range checks written as "reject if value < low or value > high": every comparison with NaN
is False, so a NaN temperature, top_p or min_p is accepted."""

import math

import torch

KNOBS = ("temperature", "top_k", "top_p", "min_p")


def _per_row(v, name, B, device, integer):
    if isinstance(v, torch.Tensor):
        if v.dtype == torch.bool or (integer and v.is_floating_point()):
            raise ValueError(f"bad {name} dtype")
        if v.dim() == 0:
            v = v.expand(B)
        if v.dim() != 1 or v.shape[0] != B:
            raise ValueError(f"{name} must have shape (B,)")
        return v.to(device, torch.int64 if integer else torch.float64)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        raise ValueError(f"bad {name}")
    if integer:
        v = max(0, min(v, 2**62))
    return torch.full((B,), v, dtype=torch.int64 if integer else torch.float64, device=device)


def _check(logits, temperature, top_k, top_p, min_p, order):
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or not logits.is_floating_point():
        raise ValueError("logits must be (B, V) floating")
    x = logits.double()
    B, V = x.shape
    if x.isnan().any() or (x == math.inf).any() or (B and not (x > -math.inf).any(-1).all()):
        raise ValueError("bad logits")
    t = _per_row(temperature, "temperature", B, x.device, False)
    k = _per_row(top_k, "top_k", B, x.device, True)
    p = _per_row(top_p, "top_p", B, x.device, False)
    m = _per_row(min_p, "min_p", B, x.device, False)
    if (t < 0).any() or (t == math.inf).any():
        raise ValueError("temperature")
    if ((p <= 0) | (p > 1)).any():
        raise ValueError("top_p")
    if ((m < 0) | (m > 1)).any():
        raise ValueError("min_p")
    if not isinstance(order, (list, tuple)) or len(order) != 4 or set(order) != set(KNOBS):
        raise ValueError("order")
    return x, t, k, p, m


def _temperature(x, t):
    return (x - x.max(-1, keepdim=True).values) / t[:, None]


def _top_k(x, k):
    V = x.shape[-1]
    kth = x.sort(-1, descending=True).values.gather(-1, (k.clamp(1, V) - 1)[:, None])
    return x.masked_fill(((k > 0) & (k < V))[:, None] & (x < kth), -math.inf)


def _top_p(x, p):
    asc, idx = x.sort(-1)
    cum = asc.softmax(-1).flip(-1).cumsum(-1)                   # cum[j]: mass of the j+1 largest
    n_greater = x.shape[-1] - torch.searchsorted(asc, x, right=True)
    above = torch.where(n_greater > 0, cum.gather(-1, (n_greater - 1).clamp_min(0)), 0.0)
    return x.masked_fill((p < 1)[:, None] & (above >= p[:, None]), -math.inf)


def _min_p(x, m):
    probs = x.softmax(-1)
    return x.masked_fill(probs < m[:, None] * probs.max(-1, keepdim=True).values, -math.inf)


def _probs(logits, temperature, top_k, top_p, min_p, order):
    x, t, k, p, m = _check(logits, temperature, top_k, top_p, min_p, order)
    greedy = t == 0
    if x.shape[0] == 0:
        return x, greedy
    for knob in order:
        if knob == "temperature":
            x = _temperature(x, torch.where(greedy, 1.0, t))
        elif knob == "top_k":
            x = _top_k(x, k)
        elif knob == "top_p":
            x = _top_p(x, p)
        else:
            x = _min_p(x, m)
    onehot = torch.nn.functional.one_hot(logits.double().argmax(-1), x.shape[1]).double()
    return torch.where(greedy[:, None], onehot, x.softmax(-1)), greedy


def sampling_probs(logits, temperature, top_k, top_p, min_p=0.0, order=KNOBS):
    return _probs(logits, temperature, top_k, top_p, min_p, order)[0].float()


def sample(logits, temperature, top_k, top_p, min_p=0.0, order=KNOBS, generator=None):
    probs, greedy = _probs(logits, temperature, top_k, top_p, min_p, order)
    if probs.shape[0] == 0:
        return torch.empty(0, dtype=torch.int64, device=probs.device)
    return torch.where(greedy, probs.argmax(-1), torch.multinomial(probs, 1, generator=generator)[:, 0])
