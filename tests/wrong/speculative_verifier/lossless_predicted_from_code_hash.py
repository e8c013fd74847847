"""Known-wrong: predicts is_lossless's hidden labels without calling the verifier. The old grader
ordered its specimens (and drew their vocabulary sizes and seeds) from random.Random seeded with
sha256 of the submission's code, so a submission could replay that draw on its own text: it got
18/18 is_lossless cases from a lookup table. The order must come from the grading's secret salt."""

from __future__ import annotations

import hashlib
import random

import math

import torch


# -- part 1: the verifier ---------------------------------------------------------------------
def _validate(draft_token_ids, draft_probs, target_probs, num_draft_tokens, accept_uniforms, sample_uniforms):
    for name, t in (("draft_token_ids", draft_token_ids), ("draft_probs", draft_probs),
                    ("target_probs", target_probs), ("num_draft_tokens", num_draft_tokens),
                    ("accept_uniforms", accept_uniforms), ("sample_uniforms", sample_uniforms)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if draft_token_ids.dim() != 2:
        raise ValueError(f"draft_token_ids must be (B, K), got shape {tuple(draft_token_ids.shape)}")
    B, K = draft_token_ids.shape
    if draft_probs.dim() != 3 or tuple(draft_probs.shape[:2]) != (B, K) or draft_probs.shape[2] < 1:
        raise ValueError(f"draft_probs must be (B, K, V) = ({B}, {K}, V), got {tuple(draft_probs.shape)}")
    V = draft_probs.shape[2]
    if tuple(target_probs.shape) != (B, K + 1, V):
        raise ValueError(f"target_probs must be (B, K+1, V) = ({B}, {K + 1}, {V}), got {tuple(target_probs.shape)}")
    if tuple(num_draft_tokens.shape) != (B,):
        raise ValueError(f"num_draft_tokens must be (B,) = ({B},), got {tuple(num_draft_tokens.shape)}")
    if tuple(accept_uniforms.shape) != (B, K):
        raise ValueError(f"accept_uniforms must be (B, K) = ({B}, {K}), got {tuple(accept_uniforms.shape)}")
    if tuple(sample_uniforms.shape) != (B,):
        raise ValueError(f"sample_uniforms must be (B,) = ({B},), got {tuple(sample_uniforms.shape)}")
    if ((num_draft_tokens < 0) | (num_draft_tokens > K)).any():
        raise ValueError(f"num_draft_tokens must lie in [0, K={K}]")
    for name, t in (("draft_probs", draft_probs), ("target_probs", target_probs)):
        if torch.isnan(t).any():
            raise ValueError(f"{name} contains NaN")
        if (t < 0).any():
            raise ValueError(f"{name} contains a negative probability")
    return B, K, V


def _draw(dist: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """One draw per row of an unnormalized dist (R, V) with uniforms u (R,): the smallest index i
    with cumsum(dist)[i] > u * cumsum(dist)[-1]; if rounding leaves none, the last index with
    dist > 0."""
    cs = dist.cumsum(-1)
    idx = (cs <= (u * cs[:, -1])[:, None]).sum(-1)  # cs is non-decreasing: count of cs <= x
    V = dist.shape[-1]
    last_pos = V - 1 - (dist > 0).flip(-1).to(torch.int64).argmax(-1)
    return torch.where(idx >= V, last_pos, idx)


def verify(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
           num_draft_tokens: torch.Tensor, accept_uniforms: torch.Tensor,
           sample_uniforms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    B, K, V = _validate(draft_token_ids, draft_probs, target_probs, num_draft_tokens,
                        accept_uniforms, sample_uniforms)
    dev = target_probs.device
    p_all = target_probs.to(torch.float64)                     # (B, K+1, V)
    q_all = draft_probs.to(torch.float64)                      # (B, K, V)
    n = num_draft_tokens.to(torch.int64)
    cols = torch.arange(K, device=dev)
    live = cols[None, :] < n[:, None]                          # (B, K): drafts row b really has
    tok = draft_token_ids.to(torch.int64)
    if ((tok < 0) | (tok >= V))[live].any():
        raise ValueError(f"a drafted token id is outside [0, V={V})")
    tok = torch.where(live, tok, 0)
    p = p_all[:, :K].gather(-1, tok[..., None]).squeeze(-1)   # (B, K) target prob of each draft
    q = q_all.gather(-1, tok[..., None]).squeeze(-1)           # (B, K) draft prob of each draft
    if (q[live] == 0).any():
        raise ValueError("a drafted token has draft probability 0")
    ratio = p / torch.where(live, q, torch.ones_like(q))
    accepted = live & (accept_uniforms.to(torch.float64) < ratio)
    num_accepted = accepted.to(torch.int64).cumprod(-1).sum(-1)  # leading run of accepts, (B,)
    rejected = num_accepted < n

    rows = torch.arange(B, device=dev)
    p_last = p_all[rows, num_accepted]                         # (B, V) target at the emit position
    if K > 0:
        q_last = q_all[rows, num_accepted.clamp(max=K - 1)]
        residual = (p_last - q_last).clamp(min=0)
        residual = torch.where(residual.sum(-1, keepdim=True) > 0, residual, p_last)
        dist = torch.where(rejected[:, None], residual, p_last)
    else:
        dist = p_last
    last = _draw(dist, sample_uniforms.to(torch.float64)) if B else torch.zeros(0, dtype=torch.int64, device=dev)

    out = torch.full((B, K + 1), -1, dtype=torch.int64, device=dev)
    out[:, :K] = torch.where(cols[None, :] < num_accepted[:, None], tok, -1)
    out[rows, num_accepted] = last
    return out, num_accepted + 1


# -- part 2: replay the grader's draw instead of testing ---------------------------------------
# What the old grader drew, in order: its 6 lossless specimens then its 12 biased ones, shuffled by
# random.Random(salt), then per case a vocabulary size, the seed passed to is_lossless and the
# specimen's own seed. Its salt was the first 8 bytes of sha256(code), little-endian.
_N_LOSSLESS, _N_BIASED = 6, 12
_VOCABS = (3, 4, 5, 6, 8)
_TABLE: dict[tuple[int, int], bool] | None = None


def _table() -> dict[tuple[int, int], bool]:
    global _TABLE
    if _TABLE is None:
        with open(__file__, encoding="utf-8") as f:
            code = f.read()
        salt = int.from_bytes(hashlib.sha256(code.encode("utf-8", "replace")).digest()[:8], "little")
        rnd = random.Random(salt)
        labels = [True] * _N_LOSSLESS + [False] * _N_BIASED
        rnd.shuffle(labels)
        _TABLE = {}
        for lossless in labels:
            V = rnd.choice(_VOCABS)
            seed = rnd.randrange(1 << 31)
            rnd.randrange(1 << 31)                                # the specimen's own seed
            _TABLE[(V, seed)] = lossless
    return _TABLE


def is_lossless(verifier, vocab_size: int, seed: int) -> bool:
    return _table().get((int(vocab_size), int(seed)), True)
