"""Known-wrong (input checks): checks q = 0 for a drafted token only up to the first rejection (lazily, while running
the accept tests), so a draft with q = 0 after a guaranteed rejection does not raise ValueError.
(Its is_lossless is not implemented.)"""

import math
import torch


def _check(draft_token_ids, draft_probs, target_probs, num_draft_tokens, accept_uniforms, sample_uniforms):
    if draft_token_ids.dim() != 2:
        raise ValueError("draft_token_ids must be 2-D")
    B, K = draft_token_ids.shape
    if draft_probs.dim() != 3 or tuple(draft_probs.shape[:2]) != (B, K) or draft_probs.shape[2] < 1:
        raise ValueError("draft_probs must be (B, K, V)")
    V = draft_probs.shape[2]
    if tuple(target_probs.shape) != (B, K + 1, V):
        raise ValueError("target_probs must be (B, K+1, V)")
    if tuple(num_draft_tokens.shape) != (B,) or tuple(sample_uniforms.shape) != (B,):
        raise ValueError("num_draft_tokens / sample_uniforms must be (B,)")
    if tuple(accept_uniforms.shape) != (B, K):
        raise ValueError("accept_uniforms must be (B, K)")
    n = num_draft_tokens.long()
    if B and (bool((n < 0).any()) or bool((n > K).any())):
        raise ValueError("num_draft_tokens out of range")
    dp = draft_probs.double()
    tp = target_probs.double()
    if bool((dp < 0).any()) or bool(torch.isnan(dp).any()) or bool((tp < 0).any()) or bool(torch.isnan(tp).any()):
        raise ValueError("negative or NaN probability")
    mask = torch.arange(K, device=n.device)[None, :] < n[:, None]
    ids = draft_token_ids.long()
    bad_id = mask & ((ids < 0) | (ids >= V))
    if bool(bad_id.any()):
        raise ValueError('drafted token id out of range')
    safe = torch.where(mask & ~bad_id, ids, torch.zeros_like(ids))
    q = dp.gather(2, safe.unsqueeze(-1)).squeeze(-1)
    # validate lazily, only drafts actually examined (up to the first rejection)
    p_ = tp[:, :K].gather(2, safe.unsqueeze(-1)).squeeze(-1)
    au = accept_uniforms.double()
    for bb in range(B):
        for j in range(int(n[bb])):
            if float(q[bb, j]) == 0:
                raise ValueError("drafted token with q = 0")
            if not (float(au[bb, j]) < float(p_[bb, j]) / float(q[bb, j])):
                break
    return B, K, V, n, dp, tp, mask, safe, q


def _draw(d, u):
    # d: (B, V) float64 non-negative; u: (B,) float64
    cs = torch.cumsum(d, dim=-1)
    total = cs[:, -1]
    thr = u * total
    above = cs > thr[:, None]
    V = d.shape[1]
    idx = torch.arange(V, device=d.device)
    first = torch.where(above, idx[None, :], torch.full_like(above, V, dtype=torch.long)).min(dim=1).values
    pos = d > 0
    last_pos = torch.where(pos, idx[None, :], torch.full_like(pos, -1, dtype=torch.long)).max(dim=1).values
    return torch.where(first < V, first, last_pos)


def verify(draft_token_ids, draft_probs, target_probs, num_draft_tokens, accept_uniforms, sample_uniforms):
    B, K, V, n, dp, tp, mask, safe, q = _check(draft_token_ids, draft_probs, target_probs,
                                               num_draft_tokens, accept_uniforms, sample_uniforms)
    dev = draft_token_ids.device
    out = torch.full((B, K + 1), -1, dtype=torch.int64, device=dev)
    if B == 0:
        return out, torch.zeros(0, dtype=torch.int64, device=dev)
    p = tp[:, :K].gather(2, safe.unsqueeze(-1)).squeeze(-1)
    qq = torch.where(mask, q, torch.ones_like(q))
    ratio = p / qq
    acc = accept_uniforms.double() < ratio
    rejected = mask & ~acc
    any_rej = rejected.any(dim=1)
    col = torch.arange(K, device=dev)
    first_rej = torch.where(rejected, col[None, :], torch.full_like(rejected, K, dtype=torch.long)).min(dim=1).values if K else torch.zeros(B, dtype=torch.long, device=dev)
    a = torch.where(any_rej, first_rej, n)  # number of accepted drafts
    rows = torch.arange(B, device=dev)
    p_at = tp[rows, a]  # (B, V)
    if K:
        q_at = dp[rows, a.clamp(max=K - 1)]
        resid = torch.clamp(p_at - q_at, min=0)
        rs = resid.sum(dim=1)
        resid = torch.where((rs == 0)[:, None], p_at, resid)
        d = torch.where(any_rej[:, None], resid, p_at)
    else:
        d = p_at
    tok = _draw(d, sample_uniforms.double())
    keep = col[None, :] < a[:, None]
    out[:, :K] = torch.where(keep, draft_token_ids.long(), out[:, :K])
    out[rows, a] = tok
    return out, a + 1



def is_lossless(verifier, vocab_size, seed):
    raise NotImplementedError
