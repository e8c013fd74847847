"""Hidden grader of speculative-verifier.

Part 1 compares ``verify`` exactly with the reference on seeded random batches and on the
boundary cases of DOMAIN-NOTES section 4 (I4: u = 0 with p = 0 must reject; ties in the draw;
u == p/q; a residual that sums to 0; ragged rows whose padding is garbage; greedy targets; rows
and batches without drafts) and checks every ValueError case.

Part 2 hands ``is_lossless`` proxies of hidden verifiers (``Specimen`` below): lossless ones that
draw differently from the reference rule and subtly biased ones. The order, the seeds and the
vocabulary sizes are drawn from the grading's secret ``g.salt`` (fresh per grading), never from
the submission, so a verdict can be neither memorized by position or seed nor predicted from
the submission's own text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from inferprep.grading import Grading, expect_tensor, fail


# -- hidden verifiers ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """How a specimen verifies. The lossless ones differ from the reference in how they draw."""

    accept: str = "ratio"        # ratio: u < p/q | p: u < p | inverted: u < q/p | exact: x == t ~ p
    uniforms: str = "given"      # given | shared (one per row) | own (its own generator)
    residual: str = "max"        # max(0,p-q) | abs |p-q| | p | swapped max(0,q-p) | onehot (p, x zeroed)
    draw: str = "given"          # given | reuse (the rejected position's accept uniform) | own | gumbel | multinomial
    bonus: str = "p_n"           # p_n | none (when n >= 1) | q_last | p_prev | col_k
    keep_going: bool = False     # verify every draft even after a rejection
    swap_first: bool = False     # swap the first emitted token between rows with the same context


LOSSLESS = {
    "reference rule": Rule(),
    "exact-match acceptance against a target sample": Rule(accept="exact", uniforms="own", draw="own"),
    "own uniforms and a Gumbel-max residual draw (vLLM style)": Rule(uniforms="own", draw="gumbel"),
    "no bonus token": Rule(bonus="none"),
    "draft treated as one-hot (ignores draft_probs)": Rule(accept="p", residual="onehot"),
    "own uniforms and torch.multinomial draws": Rule(uniforms="own", draw="multinomial"),
}
BIASED = {
    "one uniform shared across positions": Rule(uniforms="shared"),
    "residual |p - q|": Rule(residual="abs"),
    "resample from p on rejection": Rule(residual="p"),
    "residual max(0, q - p)": Rule(residual="swapped"),
    "bonus drawn from the last draft distribution": Rule(bonus="q_last"),
    "bonus drawn from the previous position's target": Rule(bonus="p_prev"),
    "bonus always from target column K (ignores n)": Rule(bonus="col_k"),
    "inverted ratio q/p": Rule(accept="inverted"),
    "accept on u < p": Rule(accept="p"),
    "keeps verifying after a rejection": Rule(keep_going=True),
    "correction drawn with the rejected draft's uniform": Rule(draw="reuse"),
    # Every per-position marginal of the stream is exact (the swapped rows are exchangeable), only
    # the joint of consecutive tokens is wrong: a test of marginals or unigram counts passes it.
    "first token swapped between rows with the same context": Rule(swap_first=True),
}


MAX_ELEMENTS = 10_000_000


class Specimen:
    """A verifier with verify's signature, hosted in the grader (``g.host(s, ["__call__"])``)."""

    def __init__(self, ref, rule: Rule, seed: int):
        self.ref, self.rule = ref, rule
        self.gen = torch.Generator().manual_seed(seed)

    def _u(self, *shape) -> torch.Tensor:
        return torch.rand(*shape, generator=self.gen, dtype=torch.float64)

    def _sample(self, dist: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        r = self.rule.draw
        if r == "gumbel":
            e = -torch.log1p(-self._u(*dist.shape))                     # Exp(1)
            return (dist / e).argmax(-1)
        if r == "multinomial":
            return torch.multinomial(dist / dist.sum(-1, keepdim=True), 1, generator=self.gen).squeeze(-1)
        return self.ref._draw(dist, self._u(dist.shape[0]) if r == "own" else u)

    def __call__(self, draft_token_ids, draft_probs, target_probs, num_draft_tokens, accept_uniforms,
                 sample_uniforms):
        for t in (draft_token_ids, draft_probs, target_probs, num_draft_tokens, accept_uniforms, sample_uniforms):
            if not isinstance(t, torch.Tensor):
                raise TypeError("every argument must be a torch.Tensor")
        if draft_token_ids.is_floating_point() or num_draft_tokens.is_floating_point():
            raise TypeError("draft_token_ids and num_draft_tokens must be integer tensors")
        if target_probs.numel() > MAX_ELEMENTS:                          # the grader's memory, not yours
            raise ValueError(f"at most {MAX_ELEMENTS:,} target probabilities (B*(K+1)*V) per call")
        threads = torch.get_num_threads()
        torch.set_num_threads(1)            # small tensors: intra-op threads only spin on a busy machine
        try:
            self._validate(draft_token_ids, draft_probs, target_probs, num_draft_tokens, accept_uniforms,
                           sample_uniforms)
            return self._verify(draft_token_ids.cpu(), draft_probs.cpu(), target_probs.cpu(),
                                num_draft_tokens.cpu(), accept_uniforms.cpu(), sample_uniforms.cpu(),
                                target_probs.device)
        except RuntimeError as e:                                        # a torch error on odd input
            raise ValueError(f"the verifier could not process these inputs: {e}") from None
        finally:
            torch.set_num_threads(threads)

    def _validate(self, tok, q_all, p_all, n, au, su) -> None:
        """verify's ValueErrors, with the reference's messages (so specimens all look alike)."""
        B, K, V = self.ref._validate(tok, q_all, p_all, n, au, su)
        live = torch.arange(K, device=tok.device)[None] < n[:, None]
        if ((tok < 0) | (tok >= V))[live].any():
            raise ValueError(f"a drafted token id is outside [0, V={V})")
        q = q_all.gather(-1, torch.where(live, tok, 0).to(torch.int64)[..., None]).squeeze(-1)
        if (q[live] == 0).any():
            raise ValueError("a drafted token has draft probability 0")

    def _verify(self, tok, q_all, p_all, n, au, su, device):
        rule = self.rule
        B, K = tok.shape
        p_all, q_all = p_all.to(torch.float64), q_all.to(torch.float64)
        au, su, n = au.to(torch.float64), su.to(torch.float64), n.to(torch.int64)
        rows, cols = torch.arange(B), torch.arange(K)
        live = cols[None] < n[:, None]
        tok = torch.where(live, tok.to(torch.int64), 0)
        p = p_all[:, :K].gather(-1, tok[..., None]).squeeze(-1)
        q = q_all.gather(-1, tok[..., None]).squeeze(-1)
        u = {"given": au, "shared": au[:, :1].expand(B, K), "own": self._u(B, K)}[rule.uniforms]
        if rule.accept == "exact":
            t = torch.stack([self._sample(p_all[:, j], su) for j in range(K + 1)], 1)   # (B, K+1) ~ p
            acc = tok == t[:, :K]
        else:
            safe_q = torch.where(live, q, 1.0)
            bound = {"ratio": p / safe_q, "p": p, "inverted": safe_q / p}[rule.accept]
            acc = u < bound
        acc &= live

        corrections = torch.empty(B, K, dtype=torch.int64)
        for j in range(K):
            if rule.accept == "exact":
                corrections[:, j] = t[:, j]
                continue
            pj, qj = p_all[:, j], q_all[:, j]
            res = {"max": (pj - qj).clamp(min=0), "abs": (pj - qj).abs(), "p": pj,
                   "swapped": (qj - pj).clamp(min=0),
                   "onehot": pj.scatter(-1, tok[:, j:j + 1], 0.0)}[rule.residual]
            res = torch.where(res.sum(-1, keepdim=True) > 0, res, pj)
            corrections[:, j] = self._sample(res, au[:, j] if rule.draw == "reuse" else su)
        nm1 = (n - 1).clamp(min=0)
        if rule.accept == "exact":
            bonus = t[rows, n]
        elif rule.bonus == "q_last" and K > 0:
            bonus = self._sample(q_all[rows, nm1], su)
        elif rule.bonus == "p_prev":
            bonus = self._sample(p_all[rows, nm1], su)
        elif rule.bonus == "col_k":
            bonus = self._sample(p_all[:, K], su)
        else:
            bonus = self._sample(p_all[rows, n], su)

        out = torch.full((B, K + 1), -1, dtype=torch.int64)
        if rule.keep_going:
            out[:, :K] = torch.where(acc, tok, torch.where(live, corrections, -1))
            out[rows, n] = bonus
            return out.to(device), (n + 1).to(device)
        m = acc.to(torch.int64).cumprod(-1).sum(-1)
        rejected = m < n
        out[:, :K] = torch.where(cols[None] < m[:, None], tok, -1)
        last = torch.where(rejected, corrections[rows, m.clamp(max=max(K - 1, 0))] if K else bonus, bonus)
        out[rows, m] = last
        num = m + 1
        if rule.bonus == "none":                                         # all n >= 1 accepted: stop there
            skip = ~rejected & (n >= 1)
            out[rows[skip], m[skip]] = -1
            num = torch.where(skip, m, num)
        if rule.swap_first:
            self._swap_first(out, num, p_all[:, 0], n)
        return out.to(device), num.to(device)

    def _swap_first(self, out, num, p0, n) -> None:
        """Pair up, at random, rows that have the same target distribution at column 0 (the same
        context) and the same n and that both emit >= 2 tokens, and swap their first tokens. Such
        rows are exchangeable, so the law of every single stream position (and of the stream's
        length and last token) is unchanged; the first token just stops depending on the rest."""
        elig = (num >= 2).nonzero().squeeze(-1)
        if elig.numel() < 2:
            return
        perm = elig[torch.randperm(elig.numel(), generator=self.gen)]
        key = torch.cat([p0[perm], n[perm, None].to(torch.float64)], 1)
        inv = torch.unique(key, dim=0, return_inverse=True)[1]
        order = torch.sort(inv, stable=True).indices                    # grouped, random within a group
        rows_s, grp = perm[order], inv[order]
        idx = torch.arange(grp.numel())
        first = torch.ones_like(grp, dtype=torch.bool)
        first[1:] = grp[1:] != grp[:-1]
        rank = idx - torch.cummax(torch.where(first, idx, 0), 0).values
        a = idx[(rank % 2 == 0) & (idx + 1 < grp.numel())]
        a = a[grp[a + 1] == grp[a]]
        ra, rb = rows_s[a], rows_s[a + 1]
        out[ra, 0], out[rb, 0] = out[rb, 0].clone(), out[ra, 0].clone()


# -- part 1 inputs ------------------------------------------------------------------------------
def _probs(B, K1, V, g, dtype=torch.float64, scale=2.0, zeros=0.0):
    x = torch.softmax(scale * torch.randn(B, K1, V, generator=g, dtype=torch.float64), -1)
    if zeros:
        x = x * (torch.rand(B, K1, V, generator=g, dtype=torch.float64) >= zeros)
        x[..., 0] += 1e-3                                                # keep every row positive
    return x.to(dtype)


def _batch(g, B, K, V, dtype=torch.float64, ragged=True, garbage=False, onehot_target=False, zeros=0.0):
    q = _probs(B, K, V, g, dtype, zeros=0.0)
    p = _probs(B, K + 1, V, g, dtype, zeros=zeros)
    if onehot_target:
        p = torch.nn.functional.one_hot(p.argmax(-1), V).to(dtype)
    drafts = torch.multinomial(q.reshape(-1, V).to(torch.float64), 1, generator=g).reshape(B, K) if B * K else \
        torch.zeros(B, K, dtype=torch.int64)
    n = torch.randint(0, K + 1, (B,), generator=g) if ragged else torch.full((B,), K, dtype=torch.int64)
    if garbage:                                                          # padding after n is not a draft
        pad = torch.arange(K)[None] >= n[:, None]
        junk = torch.randint(-3, V + 3, (B, K), generator=g)
        drafts = torch.where(pad, junk, drafts)
        q = torch.where(pad[..., None], torch.zeros((), dtype=dtype), q)
    au = torch.rand(B, K, generator=g, dtype=torch.float64)
    su = torch.rand(B, generator=g, dtype=torch.float64)
    return [drafts, q, p, n, au, su]


def _f32_near_boundary(g, B, K, V):
    """float32 probabilities with every accept uniform the largest float64 below p/q (when p/q < 1):
    float64 accepts; arithmetic in float32 usually rounds u up to p/q and rejects."""
    args = _batch(g, B, K, V, dtype=torch.float32, ragged=False)
    tok, q32, p32 = args[0], args[1], args[2]
    p = p32[:, :K].double().gather(-1, tok[..., None]).squeeze(-1)
    q = q32.double().gather(-1, tok[..., None]).squeeze(-1)
    ratio = p / q
    below = torch.nextafter(ratio, torch.zeros_like(ratio))
    args[4] = torch.where(ratio < 1, below, args[4])
    return args


def _draw_ties(g, rows=12, V=6):
    """Bonus draws (n = 0) from dyadic d whose total is not a power of two, with s = cumsum[i] / total
    chosen where s * total == cumsum[i] (no index i) but the normalized cumsum[i] / total > s."""
    ds, us = [], []
    while len(ds) < rows:
        d = torch.randint(0, 9, (V,), generator=g).double() / 8
        cs = d.cumsum(0)
        total = float(cs[-1])
        i = int(torch.randint(0, V - 1, (1,), generator=g))
        if total == 0 or cs[i] == 0 or cs[i] == total:
            continue
        u = float(cs[i]) / total
        if (cs <= u * total).sum() != (cs / total <= u).sum():
            ds.append(d)
            us.append(u)
    return [torch.zeros(rows, 1, dtype=torch.int64), torch.full((rows, 1, V), 1.0 / V, dtype=torch.float64),
            torch.stack([torch.stack(ds), torch.stack(ds)], 1), torch.zeros(rows, dtype=torch.int64),
            torch.full((rows, 1), 0.5, dtype=torch.float64), torch.tensor(us, dtype=torch.float64)]


def _check_verify(g: Grading, ref, args, what: str = "") -> None:
    dev = [a.to(g.device) for a in args]
    got = g.call("verify", *dev)
    want_ids, want_num = ref.verify(*args)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail("verify must return a tuple (output_ids, num_emitted)")
    expect_tensor(got[1], want_num.to(g.device), name="num_emitted")
    expect_tensor(got[0], want_ids.to(g.device), name="output_ids")


def _part1(g: Grading, ref) -> None:
    shapes = [(8, 1, 2), (16, 3, 5), (32, 4, 12), (24, 5, 50), (64, 2, 3), (40, 7, 9)]
    for i, (B, K, V) in enumerate(shapes):
        with g.case(f"verify: random ragged B={B} K={K} V={V}"):
            _check_verify(g, ref, _batch(g.rng(100 + i), B, K, V))
    with g.case("verify: float32 probabilities, all rows with K drafts"):
        _check_verify(g, ref, _batch(g.rng(200), 32, 4, 16, dtype=torch.float32, ragged=False))
    with g.case("verify: targets with zero-probability tokens"):
        _check_verify(g, ref, _batch(g.rng(201), 48, 4, 8, zeros=0.5))
    with g.case("verify: ragged rows whose padding holds junk ids and q = 0"):
        _check_verify(g, ref, _batch(g.rng(202), 48, 5, 7, garbage=True))
    with g.case("verify: greedy (one-hot targets)"):
        args = _batch(g.rng(203), 32, 4, 6, onehot_target=True)
        _check_verify(g, ref, args)
        args[1] = torch.nn.functional.one_hot(args[0].clamp(0, 5), 6).to(torch.float64)  # one-hot drafts too
        _check_verify(g, ref, args)
    with g.case("verify: rows with 0 drafts"):
        args = _batch(g.rng(204), 16, 3, 5)
        args[3] = torch.zeros(16, dtype=torch.int64)
        _check_verify(g, ref, args)
    with g.case("verify: K = 0 (only the bonus token)"):
        _check_verify(g, ref, _batch(g.rng(205), 6, 0, 4))
    with g.case("verify: empty batch"):
        _check_verify(g, ref, _batch(g.rng(206), 0, 3, 4))

    # Boundary cases with dyadic probabilities (exact in any summation order).
    def one(q, p, x, n, au, su):
        K = len(q)
        return [torch.tensor([x + [0] * (K - len(x))]), torch.tensor([q], dtype=torch.float64),
                torch.tensor([p], dtype=torch.float64), torch.tensor([n]),
                torch.tensor([au], dtype=torch.float64), torch.tensor([su], dtype=torch.float64)]
    with g.case("verify: u = 0 with target probability 0 rejects (sglang #35771)"):
        _check_verify(g, ref, one([[0.5, 0.5]], [[0.0, 1.0], [0.25, 0.75]], [0], 1, [0.0], 0.0))
    with g.case("verify: u equal to p/q rejects"):
        _check_verify(g, ref, one([[0.5, 0.5]], [[0.25, 0.75], [0.5, 0.5]], [0], 1, [0.5], 0.5))
    with g.case("verify: draw tie u*total == cumsum[i] takes the next index"):
        # bonus from [.25, .25, .5] with s = .5: partial sums [.25, .5, 1]; .5 is not > .5, so index 2
        _check_verify(g, ref, one([[0.5, 0.25, 0.25]], [[0.25, 0.25, 0.5], [0.25, 0.25, 0.5]], [0], 0, [0.75], 0.5))
        # rejected draft 0 (p/q = .5 <= .75), residual [.25, 0, .25] with s = .5: index 2, not 0
        _check_verify(g, ref, one([[0.25, 0.5, 0.25]], [[0.5, 0.25, 0.5], [1.0, 0.0, 0.0]], [1], 1, [0.75], 0.5))
        _check_verify(g, ref, one([[0.5, 0.5, 0.0]], [[0.5, 0.0, 0.5], [0.5, 0.0, 0.5]], [0], 0, [0.0], 0.5))
    with g.case("verify: all drafts accepted emits n + 1 tokens, the bonus from column n"):
        _check_verify(g, ref, one([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]],
                                  [[0.5, 0.5], [0.5, 0.5], [0.0, 1.0], [1.0, 0.0]], [1, 0], 2, [0.25, 0.75, 0.0], 0.0))
    with g.case("verify: residual that sums to 0 falls back to the target"):
        # target row not normalized: p = q/2, so p/q = 0.5 and max(0, p - q) is all zeros
        _check_verify(g, ref, one([[0.5, 0.25, 0.25]], [[0.25, 0.125, 0.125], [0.5, 0.5, 0.0]], [1], 1, [0.75], 0.5))

    with g.case("verify: float32 inputs, u just below p/q (the accept test in float64)"):
        # p/q = .25/.75 = 0.333...3 in float64 > u = 0.33333333 (accept, then bonus 1); in float32 the
        # quotient and u both round to 0.33333334 and the draft would be rejected
        args = one([[0.75, 0.25]], [[0.25, 0.75], [0.5, 0.5]], [0], 1, [0.33333333], 0.5)
        args[1], args[2] = args[1].float(), args[2].float()
        _check_verify(g, ref, args)
        _check_verify(g, ref, _f32_near_boundary(g.rng(207), 64, 3, 6))
    with g.case("verify: draw ties (u*total equal to a partial sum) with totals that are not powers of two"):
        # [0, .625, .125] with s = 0.8333333333333333: s*.75 == .625 exactly, so index 2; the
        # normalized partial sum .625/.75 rounds to 0.8333333333333334 > s and would give index 1
        _check_verify(g, ref, [torch.zeros(1, 0, dtype=torch.int64), torch.zeros(1, 0, 3, dtype=torch.float64),
                               torch.tensor([[[0.0, 0.625, 0.125]]], dtype=torch.float64), torch.tensor([0]),
                               torch.zeros(1, 0, dtype=torch.float64),
                               torch.tensor([0.8333333333333333], dtype=torch.float64)])
        _check_verify(g, ref, _draw_ties(g.rng(208)))
    with g.case("verify: q = 0 at a draft after a guaranteed rejection still raises ValueError"):
        # draft 0 has p = 0 so it is always rejected; draft 1 has q = 0 -> the error checks cover every j < n
        args = one([[0.5, 0.5], [1.0, 0.0]], [[0.0, 1.0], [0.5, 0.5], [0.5, 0.5]], [0, 1], 2, [0.5, 0.5], 0.5)
        g.raises("ValueError", "verify", *[a.to(g.device) for a in args])

    # ValueError cases.
    base = _batch(g.rng(300), 4, 3, 5, ragged=False)
    bad = {
        "draft_probs with the wrong V": (1, lambda t: t[..., :4]),
        "target_probs without the bonus column": (2, lambda t: t[:, :3]),
        "num_draft_tokens of the wrong length": (3, lambda t: t[:3]),
        "accept_uniforms of the wrong shape": (4, lambda t: t[:, :2]),
        "sample_uniforms of the wrong length": (5, lambda t: t[:2]),
        "draft_token_ids that is not 2-D": (0, lambda t: t.reshape(-1)),
        "num_draft_tokens = -1": (3, lambda t: torch.tensor([3, -1, 0, 2])),
        "num_draft_tokens = K + 1": (3, lambda t: torch.tensor([3, 4, 0, 2])),
        "a negative probability": (2, lambda t: t.index_put((torch.tensor([1]), torch.tensor([3]), torch.tensor([2])),
                                                            torch.tensor(-0.25, dtype=t.dtype))),
        "a NaN probability": (1, lambda t: t.index_put((torch.tensor([2]), torch.tensor([0]), torch.tensor([4])),
                                                       torch.tensor(float("nan"), dtype=t.dtype))),
        "a drafted token with q = 0": (1, lambda t: t.scatter(-1, base[0][..., None], 0.0)),
        "a drafted token id outside [0, V)": (0, lambda t: t.index_put((torch.tensor([0]), torch.tensor([1])),
                                                                      torch.tensor(5))),
    }
    for what, (i, f) in bad.items():
        with g.case(f"verify raises ValueError: {what}"):
            args = list(base)
            args[i] = f(args[i])
            g.raises("ValueError", "verify", *[a.to(g.device) for a in args])


# -- part 2 -------------------------------------------------------------------------------------
VOCABS = (3, 4, 5, 6, 8)


def _part2(g: Grading, ref) -> None:
    rnd = random.Random(f"speculative-verifier part 2:{g.salt}")
    specimens = [(name, rule, True) for name, rule in LOSSLESS.items()] + \
                [(name, rule, False) for name, rule in BIASED.items()]
    rnd.shuffle(specimens)
    for name, rule, lossless in specimens:
        kind = "lossless" if lossless else "biased"
        with g.case(f"is_lossless: {kind} verifier ({name})"):
            V = rnd.choice(VOCABS)
            seed = rnd.randrange(1 << 31)
            handle = g.host(Specimen(ref, rule, rnd.randrange(1 << 31)), ["__call__"])
            got = g.call("is_lossless", handle, V, seed)
            if not isinstance(got, bool):
                fail(f"is_lossless must return a bool, got {type(got).__name__}")
            if got != lossless:
                fail(f"this {kind} verifier was judged {'lossless' if got else 'biased'} "
                     f"(vocab_size={V}, {len(g.calls)} verifier calls)")


def grade(g: Grading) -> None:
    ref = g.reference()
    _part1(g, ref)
    _part2(g, ref)
