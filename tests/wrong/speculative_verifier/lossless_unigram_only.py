"""Known-wrong: is_lossless compares only the pooled unigram counts of the streams with the expected
ones: a verifier whose per-position marginals are exact but whose joint is wrong is judged lossless."""

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
    if bool((mask & ((ids < 0) | (ids >= V))).any()):
        raise ValueError("drafted token id out of range")
    safe = torch.where(mask, ids, torch.zeros_like(ids))
    q = dp.gather(2, safe.unsqueeze(-1)).squeeze(-1)
    if bool((mask & (q == 0)).any()):
        raise ValueError("drafted token with q = 0")
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


# ---------------- part 2 -----------------

def _rand_dist(g, shape, V, floor):
    x = torch.distributions.Dirichlet  # unused, keep deterministic with generator
    e = -torch.log(torch.rand(*shape, V, generator=g, dtype=torch.float64))
    d = e / e.sum(-1, keepdim=True)
    return floor / V + (1 - floor) * d


def _chi2_threshold(df, z):
    # Wilson-Hilferty upper quantile
    h = 2.0 / (9.0 * df)
    return df * (1 - h + z * math.sqrt(h)) ** 3


def _run_config(verifier, V, g, K, n_policy, R, T, calls_left):
    # Markov order-1 target and draft tables
    tgt = _rand_dist(g, (V,), V, 0.5)           # tgt[prev] -> dist
    drf = _rand_dist(g, (V,), V, 0.2)
    # make draft differ a lot: sharpen
    start = int(torch.randint(V, (1,), generator=g))
    streams = torch.full((R, T), -1, dtype=torch.long)
    length = torch.zeros(R, dtype=torch.long)
    last = torch.full((R,), start, dtype=torch.long)
    ncalls = 0
    while True:
        active = (length < T).nonzero().squeeze(1)
        if active.numel() == 0:
            break
        B = active.numel()
        if n_policy == "uniform":
            n = torch.randint(0, K + 1, (B,), generator=g)
        else:
            n = torch.full((B,), n_policy, dtype=torch.long)
        ids = torch.randint(0, V, (B, K), generator=g)  # padding: random valid ids
        dprobs = _rand_dist(g, (B, K), V, 0.3)            # padding: random dists
        tprobs = _rand_dist(g, (B, K + 1), V, 0.3)
        prev = last[active].clone()
        for j in range(K + 1):
            live = j <= n
            tprobs[live, j] = tgt[prev[live]]
            if j < K:
                livej = j < n
                qd = drf[prev[livej]]
                x = torch.multinomial(qd, 1, generator=g).squeeze(1)
                ids[livej, j] = x
                dprobs[livej, j] = qd
                prev = prev.clone()
                prev[livej] = x
        au = torch.rand(B, K, generator=g, dtype=torch.float64)
        su = torch.rand(B, generator=g, dtype=torch.float64)
        out, ne = verifier(ids, dprobs, tprobs, n, au, su)
        ncalls += 1
        out = out.long(); ne = ne.long()
        for c in range(K + 1):
            sel = (ne > c)
            rows = active[sel]
            pos = length[rows]
            ok = pos < T
            rows = rows[ok]; pos = pos[ok]
            streams[rows, pos] = out[sel][ok, c]
            length[rows] += 1
            last[active[sel]] = out[sel, c]
        # rows whose length >= T are done (extra tokens dropped)
        length = torch.where(length >= T, torch.full_like(length, T), length)
        if ncalls > 60:
            break
    # exact joint
    codes = torch.zeros(R, dtype=torch.long)
    for t in range(T):
        codes = codes * V + streams[:, t]
    counts = torch.bincount(codes, minlength=V ** T).double()
    prob = torch.zeros(V ** T, dtype=torch.float64)
    # enumerate
    joint = tgt[start].clone()  # (V,)
    for t in range(1, T):
        lastc = torch.arange(joint.numel()) % V
        joint = (joint[:, None] * tgt[lastc]).reshape(-1)
    prob = joint
    pj = prob.reshape([V] * T)
    m = sum(pj.sum(dim=[k for k in range(T) if k != t]) for t in range(T)) * R
    c = torch.bincount(streams.reshape(-1), minlength=V).double()
    return float(((c - m) ** 2 / m).sum()), V - 1


def is_lossless(verifier, vocab_size, seed):
    V = int(vocab_size)
    g = torch.Generator().manual_seed(int(seed) & 0x7FFFFFFFFFFFFFFF)
    configs = [(4, "uniform"), (3, 3), (3, 1)]
    z = 6.3  # ~1.5e-10 per test, 3 tests
    T = 3
    R = 60000
    for K, pol in configs:
        stat, df = _run_config(verifier, V, g, K, pol, R, T, None)
        if stat > _chi2_threshold(df, z):
            return False
    return True
