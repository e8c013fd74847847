"""Hidden grader of speculative-verifier.

Part 1 compares ``verify`` exactly with the reference on seeded random batches and on the
boundary cases of DOMAIN-NOTES section 4 (u = 0 with p = 0 must reject; ties in the draw, for the
bonus and for the residual; u == p/q; a residual that sums to 0; draws that float32 arithmetic
would decide differently; subnormal masses whose draw falls back to the last index with mass;
ragged rows whose padding is garbage; greedy targets; rows and batches without drafts). Its
ValueError cases form the ``input checks`` group and run last.

Part 2 hands ``is_lossless`` proxies of hidden verifiers (``Specimen``): lossless ones and biased
ones. Nothing about a specimen can be learnt from an earlier grading and replayed:
- every specimen's behaviour depends on the grading's secret ``g.salt``: besides its bias (or
  none), each one draws a lossless *style* (its own uniforms or the given ones through a secret
  rotation u -> frac(u + c); accept by the ratio, by a one-hot draft or by exact match; draw by
  inverse CDF, Gumbel-max or torch.multinomial; emit or skip the bonus token) independently of
  its label, so its outputs on fixed inputs, its determinism and its structure are not a label;
- cases are named "is_lossless #i" in a salt-shuffled order; vocabulary sizes and seeds come
  from the salt too;
- a specimen refuses (ValueError) a call whose V differs from the ``vocab_size`` it was asked
  about;
- two more cases ask ``is_lossless`` about one deterministic lossless verifier: twice with the
  same seed, requiring identical verifier calls (the same seed must give the same test), and
  with a second seed, requiring the calls to differ (a test that ignores its seed is a fixed
  probe, which is what a lookup table needs).

False alarms and misses. The grader runs no statistical test of its own: part 2's verdict is the
submission's answer. What it must guarantee is that a correct test gets every case right for
every salt, and the salt decides everything here (styles, specimen seeds, V, the seeds handed to
is_lossless), so the question is how often a salt makes a specimen hard for the reference test
(3 scenarios of 16,000 rows, joint of 3 tokens, chi-square at z = 6):
- a lossless specimen is called biased with probability about 1e-9 per scenario (the chi-square
  threshold; any lossless style is lossless exactly), so about 3e-8 per grading over the 7
  lossless specimens and the seed cases' 3 calls (10 calls, 30 scenarios). The seed cases add no
  false alarm of their own: a test seeded from `seed` sends a deterministic verifier the same
  calls on the same seed, every time; two seeds send the same calls only if the test's inputs
  collide, which a test of thousands of random rows never does;
- a biased specimen: for every (bias, acceptance rule, bonus) the grader can draw (the draw method
  and the source of uniforms do not change a specimen's law) we ran the reference test on seeds
  0-19 and V in {3, 4, 5, 6, 8} (100 runs each) and took the margin of its most telling scenario,
  (E[stat] - threshold) / sd with the non-centrality estimated from the statistic. Apart from the
  two joint-only biases below, the smallest was 9.6 (one uniform shared across positions); the
  means run from 30 to over 1,000.
  The joint-only biases (swap_first, decouple_first) were weak at V = 3. Margins there with the sd
  estimated from repeats (4-5 specimen seeds per test seed, own uniforms, ratio test): swap_first
  over test seeds 0-29 at least 5.2 sd with the bonus and 3.3 without (seed 20), and 4.5 / 1.4 at
  seed 38 (one scenario -2.5); decouple_first over seeds 0-19 at least 1.8 with the bonus (seed
  11) and 6.0 without. At seed 38 without the bonus a miss is
  about 1 in 100 (two scenarios at 1.2 and 1.4 sd must both fall short). So SPECIMEN_VOCABS asks
  about them only at V in {4, 5, 6, 8}. There, screened over test seeds 100-299 (one run each,
  margin with the non-centrality estimated from the statistic; medians 83-135 sd) and rerun with
  8 specimen seeds on the 3-4 weakest seeds of each V, the smallest margins from repeats were
  (V: with bonus / without): swap_first 4: 6.5 / 8.5, 5: 9.2 / 6.0, 6: 11.5 / 11.1, 8: 15.5 / 9.7;
  decouple_first 4: 10.6 / 10.3, 5: 17.2 / 8.5, 6: 11.0 / 8.2, 8: 15.7 / 16.0 (over seeds 0-29
  and 0-19 with 4-5 repeats the smallest was 10.6 and 12.3). Those weakest seeds' statistics are
  8 to 50 times the threshold (the smallest of 8 repeats still at least 1,100 above it); the sd
  is inflated by sparse cells whose few counts enter squared, so the statistic's lower tail is
  lighter than a normal one, and 6 sd (1e-9 under a normal tail) on about one test seed in 200 is
  a conservative bound: a miss is well below 1e-9 per grading. The biases
  that act only after an acceptance keep the ratio test, because one-hot and exact-match
  acceptance made them too rare (margins down to -2 at 8,000 rows). tests/figures/test_speculative_verifier.py reruns every
  combination at seed 0 (at the V the grader may ask about) and requires a margin above 6.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

import torch

from inferprep.grading import CORE, INPUT_CHECKS, Grading, Trial, expect_tensor, fail


# -- hidden verifiers ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Style:
    """How a specimen draws: choices that keep a correct verifier lossless."""

    uniforms: str = "given"     # given (through the rotation frac(u + c)) | own (its generator)
    accept: str = "ratio"       # ratio: u < p/q | onehot: u < p(x), residual p with x zeroed | exact: x == t ~ p
    draw: str = "icdf"          # icdf (the draw rule, with a uniform) | gumbel | multinomial
    bonus: bool = True          # False: a row whose n >= 1 drafts are all accepted stops there


# bias -> (accept styles it applies to, options it forces). None is the lossless specimen. A bias
# that acts after a draft is accepted (the bonus, the first token, the padding) keeps the ratio
# test: one-hot and exact-match acceptance accept so rarely that the bias shrinks below what the
# reference test detects with overwhelming probability (tests/figures measures every pair kept).
BIASES: dict[str, tuple[tuple[str, ...], dict]] = {
    "shared": (("ratio", "exact"), {"draw": "icdf"}),   # one uniform for every position of a row
    "abs": (("ratio",), {}),                                      # residual |p - q|
    "resample_p": (("ratio", "onehot"), {}),                      # correction drawn from p
    "swapped": (("ratio",), {}),                                  # residual max(0, q - p)
    "full_rows_swapped": (("ratio",), {}),                        # max(0, q - p) only where n == K
    "bonus_q_last": (("ratio",), {"bonus": True}),               # bonus from q_{n-1}
    "bonus_p_prev": (("ratio",), {"bonus": True}),               # bonus from p_{n-1}
    "bonus_col_k": (("ratio",), {"bonus": True}),                # bonus from p_K whatever n
    "inverted": (("ratio",), {}),                                 # accept on u < q/p
    "accept_p": (("ratio",), {}),                                 # accept on u < p, residual max(0, p - q)
    "keep_going": (("ratio", "onehot"), {"bonus": True}),         # verifies every draft after a rejection
    "reuse": (("ratio", "onehot"), {"draw": "icdf"}),             # correction drawn with the rejected u
    # The two below keep every single stream position's law exact; only the joint of consecutive
    # tokens is wrong. swap_first needs rows with the same context in one call; decouple_first
    # works row by row.
    "swap_first": (("ratio",), {}),
    "decouple_first": (("ratio",), {}),
    # Reads padding: a row with n < K whose drafts are all accepted emits the padding id at column
    # n as its bonus token when that id is in [0, V) (and the right bonus otherwise). The output
    # keeps the contract (n + 1 tokens, ids in [0, V)); padding of -1 hides it, padding drafted
    # from q (or any id in range) shows it.
    "padding_bonus": (("ratio",), {"bonus": True}),
}

DESCRIPTION = {
    None: "lossless",
    "shared": "biased: one uniform shared by every position of a row",
    "abs": "biased: residual |p - q|",
    "resample_p": "biased: the correction is drawn from p, not from the residual",
    "swapped": "biased: residual max(0, q - p)",
    "full_rows_swapped": "biased: residual max(0, q - p) on rows with n = K (all drafts present) only",
    "bonus_q_last": "biased: the bonus is drawn from the last draft distribution",
    "bonus_p_prev": "biased: the bonus is drawn from the previous position's target",
    "bonus_col_k": "biased: the bonus is drawn from target column K whatever n is",
    "inverted": "biased: accepts on u < q/p",
    "accept_p": "biased: accepts on u < p but draws the correction from max(0, p - q)",
    "keep_going": "biased: keeps verifying after a rejection",
    "reuse": "biased: draws the correction with the rejected draft's uniform",
    "swap_first": "biased only in the joint: the first token is swapped between rows with the same context",
    "decouple_first": "biased only in the joint: an accepted first draft is replaced by an independent token "
                      "of the same law",
    "padding_bonus": "biased: a row with n < K whose drafts are all accepted emits the padding id at column n "
                     "(when it is in [0, V)) as its bonus",
}

MAX_ELEMENTS = 10_000_000


def _style_text(s: Style) -> str:
    parts = [{"given": "the given uniforms", "own": "its own uniforms"}[s.uniforms],
             {"ratio": "accepts on u < p/q", "onehot": "treats the draft as one-hot",
              "exact": "accepts by exact match with a target sample"}[s.accept],
             {"icdf": "inverse-CDF draws", "gumbel": "Gumbel-max draws", "multinomial": "torch.multinomial draws"}[s.draw]]
    if not s.bonus:
        parts.append("no bonus token")
    return ", ".join(parts)


class Specimen:
    """A verifier with verify's signature, hosted in the grader (``g.host(s, ["__call__"])``).

    ``bias`` None is lossless. ``rotation`` (c_accept, c_sample) is the secret shift of the
    given uniforms; (0, 0) uses them as they are. ``vocab_size``, when set, is the only V it
    accepts. ``calls`` counts the calls; with ``record``, ``digests`` keeps a digest of each call's
    arguments (only the seed cases compare them: hashing every call of every specimen cost about
    a tenth of a grading)."""

    def __init__(self, ref, style: Style = Style(), bias: str | None = None, seed: int = 0,
                 rotation: tuple[float, float] = (0.0, 0.0), vocab_size: int | None = None,
                 record: bool = False):
        if bias is not None and style.accept not in BIASES[bias][0]:
            raise ValueError(f"bias {bias} does not apply to accept={style.accept}")
        self.ref, self.style, self.bias = ref, style, bias
        self.rotation = rotation
        self.vocab_size = vocab_size
        self.gen = torch.Generator().manual_seed(seed)
        self.record = record
        self.calls = 0
        self.digests: list[str] = []

    # randomness
    def _own(self, *shape) -> torch.Tensor:
        return torch.rand(*shape, generator=self.gen, dtype=torch.float64)

    def _sample(self, dist: torch.Tensor, u: torch.Tensor | None) -> torch.Tensor:
        """One token per row of the unnormalized dist (R, V), by the style's draw."""
        # Rows drawn here include padding columns (a correction per column, exact match's target
        # sample per column), whose content is the caller's: any non-negative values, all zeros
        # included. Every method must return an index in [0, V) for those rows without raising;
        # what it returns there is never emitted by a lossless specimen. On a row with positive
        # mass the law is the row's normalized distribution, as before.
        d = self.style.draw
        if d == "gumbel":
            e = -torch.log1p(-self._own(*dist.shape))                    # Exp(1)
            # a zero-mass token never wins (0 / e, and 0 / 0 = NaN when e == 0, would tie or win)
            return torch.where(dist > 0, dist / e, -1.0).argmax(-1)
        if d == "multinomial":
            if dist.shape[0] == 0:
                return torch.zeros(0, dtype=torch.int64)
            # scaled by the row's maximum (a sum of huge masses may overflow), an all-zero row
            # (padding) drawn uniformly: torch.multinomial raises on a row without mass
            top = dist.amax(-1, keepdim=True)
            w = torch.where(top > 0, dist / torch.where(top > 0, top, 1.0), 1.0)
            return torch.multinomial(w, 1, generator=self.gen).squeeze(-1)
        return self.ref._draw(dist, self._own(dist.shape[0]) if u is None else u)

    def __call__(self, draft_token_ids, draft_probs, target_probs, num_draft_tokens, accept_uniforms,
                 sample_uniforms):
        args = (draft_token_ids, draft_probs, target_probs, num_draft_tokens, accept_uniforms, sample_uniforms)
        for t in args:
            if not isinstance(t, torch.Tensor):
                raise TypeError("every argument must be a torch.Tensor")
        if draft_token_ids.is_floating_point() or num_draft_tokens.is_floating_point():
            raise TypeError("draft_token_ids and num_draft_tokens must be integer tensors")
        if target_probs.numel() > MAX_ELEMENTS:                          # the grader's memory, not yours
            raise ValueError(f"at most {MAX_ELEMENTS:,} target probabilities (B*(K+1)*V) per call")
        self.calls += 1
        if self.record:
            self._record(args)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)            # small tensors: intra-op threads only spin on a busy machine
        try:
            self._validate(*args)
            return self._verify(*(a.cpu() for a in args), target_probs.device)
        except RuntimeError as e:                                        # a torch error on odd input
            raise ValueError(f"the verifier could not process these inputs: {e}") from None
        finally:
            torch.set_num_threads(threads)

    def _record(self, args) -> None:
        """A digest of what the submission sent (the seed case compares two runs)."""
        h = hashlib.sha256()
        for t in args:
            t = t.detach().cpu().contiguous()
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            try:
                h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
            except (RuntimeError, TypeError):
                h.update(repr(t.tolist()).encode())
        self.digests.append(h.hexdigest())

    def _validate(self, tok, q_all, p_all, n, au, su) -> None:
        """verify's ValueErrors, with the reference's messages (so specimens all look alike)."""
        B, K, V = self.ref._validate(tok, q_all, p_all, n, au, su)
        if self.vocab_size is not None and V != self.vocab_size:
            raise ValueError(f"this verifier was handed to is_lossless with vocab_size={self.vocab_size}; "
                             f"call it with V = vocab_size, not V = {V}")
        live = torch.arange(K, device=tok.device)[None] < n[:, None]
        if ((tok < 0) | (tok >= V))[live].any():
            raise ValueError(f"a drafted token id is outside [0, V={V})")
        q = q_all.gather(-1, torch.where(live, tok, 0).to(torch.int64)[..., None]).squeeze(-1)
        if (q[live] == 0).any():
            raise ValueError("a drafted token has draft probability 0")

    def _verify(self, tok, q_all, p_all, n, au, su, device):
        st, bias = self.style, self.bias
        B, K = tok.shape
        p_all, q_all = p_all.to(torch.float64), q_all.to(torch.float64)
        au, su, n = au.to(torch.float64), su.to(torch.float64), n.to(torch.int64)
        rows, cols = torch.arange(B), torch.arange(K)
        live = cols[None] < n[:, None]
        raw_tok = tok.to(torch.int64)
        tok = torch.where(live, raw_tok, 0)
        p = p_all[:, :K].gather(-1, tok[..., None]).squeeze(-1)
        q = q_all.gather(-1, tok[..., None]).squeeze(-1)
        if st.uniforms == "given":
            ca, cs = self.rotation
            A, S = torch.remainder(au + ca, 1.0), torch.remainder(su + cs, 1.0)
        else:
            A, S = self._own(B, K), self._own(B)
        if bias == "shared":
            A = A[:, :1].expand(B, K)

        if st.accept == "exact":
            # t_j ~ p_j for j = 0..K from the specimen's own randomness; x_j is accepted iff x_j == t_j
            # and the token emitted at the first mismatch (or as the bonus) is t itself.
            w = self._own(B) if bias == "shared" else None
            t = torch.stack([self._sample(p_all[:, j], w) for j in range(K + 1)], 1) if B else \
                torch.zeros(0, K + 1, dtype=torch.int64)
            acc = (tok == t[:, :K]) & live
            corrections = t[:, :K]
        else:
            safe_q = torch.where(live, q, 1.0)
            bound = {"inverted": safe_q / p, "accept_p": p}.get(bias, p / safe_q if st.accept == "ratio" else p)
            acc = (A < bound) & live
            corrections = torch.empty(B, K, dtype=torch.int64)
            for j in range(K):
                pj, qj = p_all[:, j], q_all[:, j]
                if bias == "abs":
                    res = (pj - qj).abs()
                elif bias == "resample_p":
                    res = pj
                elif bias == "swapped":
                    res = (qj - pj).clamp(min=0)
                elif bias == "full_rows_swapped":                        # right on rows with n < K
                    res = torch.where((n == K)[:, None], qj - pj, pj - qj).clamp(min=0)
                elif st.accept == "onehot":
                    res = pj.scatter(-1, tok[:, j:j + 1], 0.0)
                else:
                    res = (pj - qj).clamp(min=0)
                res = torch.where(res.sum(-1, keepdim=True) > 0, res, pj)
                corrections[:, j] = self._sample(res, A[:, j] if bias == "reuse" else S)

        nm1 = (n - 1).clamp(min=0)
        bonus_dist = None
        if bias == "bonus_q_last" and K > 0:
            bonus_dist = q_all[rows, nm1]
        elif bias == "bonus_p_prev":
            bonus_dist = p_all[rows, nm1]
        elif bias == "bonus_col_k":
            bonus_dist = p_all[:, K]
        if bonus_dist is not None:
            bonus = self._sample(bonus_dist, None if st.accept == "exact" else S)
        elif st.accept == "exact":
            bonus = t[rows, n]
        else:
            bonus = self._sample(p_all[rows, n], S)
        if bias == "padding_bonus" and K > 0:
            pad = raw_tok[rows, n.clamp(max=K - 1)]
            bonus = torch.where((n < K) & (pad >= 0) & (pad < p_all.shape[-1]), pad, bonus)

        out = torch.full((B, K + 1), -1, dtype=torch.int64)
        if bias == "keep_going":
            out[:, :K] = torch.where(acc, tok, torch.where(live, corrections, -1))
            out[rows, n] = bonus
            return out.to(device), (n + 1).to(device)
        m = acc.to(torch.int64).cumprod(-1).sum(-1)
        rejected = m < n
        out[:, :K] = torch.where(cols[None] < m[:, None], tok, -1)
        last = torch.where(rejected, corrections[rows, m.clamp(max=max(K - 1, 0))] if K else bonus, bonus)
        out[rows, m] = last
        num = m + 1
        if not st.bonus:                                                 # all n >= 1 accepted: stop there
            skip = ~rejected & (n >= 1)
            out[rows[skip], m[skip]] = -1
            num = torch.where(skip, m, num)
        if bias == "swap_first":
            self._swap_first(out, num, p_all[:, 0], n)
        elif bias == "decouple_first" and K > 0:
            self._decouple_first(out, num, p_all[:, 0], q_all[:, 0])
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

    def _decouple_first(self, out, num, p0, q0) -> None:
        """In every row that emits >= 2 tokens (so draft 0 was accepted), replace the first token
        by an independent draw from the law of an accepted draft 0: q0(x) a(x) normalized, a(x)
        the style's acceptance probability. Whether a row emits >= 2 tokens does not depend on
        which x was drafted once it is accepted, so every stream position keeps its law, and the
        context of the next call (the last token) is untouched; only the first token stops
        depending on the tokens after it, row by row."""
        rows = (num >= 2).nonzero().squeeze(-1)
        if rows.numel() == 0:
            return
        p, q = p0[rows], q0[rows]
        if self.style.accept == "ratio":
            law = torch.minimum(p, q)
        elif self.style.accept == "onehot":
            law = q * p.clamp(max=1.0)
        else:
            law = q * p / p.sum(-1, keepdim=True)
        out[rows, 0] = self.ref._draw(law, self._own(rows.numel()))


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


def _f64_near_boundary(g, B, K, V):
    """float64 probabilities with every accept uniform the largest float64 below p/q (when
    p/q < 1): float64 accepts; p or q rounded through float32 first often rejects."""
    args = _batch(g, B, K, V, dtype=torch.float64, ragged=False)
    tok, q, p = args[0], args[1], args[2]
    ratio = p[:, :K].gather(-1, tok[..., None]).squeeze(-1) / q.gather(-1, tok[..., None]).squeeze(-1)
    below = torch.nextafter(ratio, torch.zeros_like(ratio))
    args[4] = torch.where(ratio < 1, below, args[4])
    return args


def _bonus_rows(dists: list[torch.Tensor], us: list[float], dtype=torch.float64):
    """Rows with no drafts (K = 1, n = 0): each row emits one token drawn from its target column 0."""
    R, V = len(dists), dists[0].shape[0]
    p = torch.stack(dists).to(dtype)
    return [torch.zeros(R, 1, dtype=torch.int64), torch.full((R, 1, V), 1.0 / V, dtype=dtype),
            torch.stack([p, p], 1), torch.zeros(R, dtype=torch.int64),
            torch.full((R, 1), 0.5, dtype=torch.float64), torch.tensor(us, dtype=torch.float64)]


def _residual_rows(residuals: list[torch.Tensor], us: list[float], q_off: bool = True):
    """Rows (K = n = 1) whose draft 0 is rejected whatever u is (p(x) = 0) and whose residual
    max(0, p - q) is exactly the given row (entry 0 must be 0): q = [1/2, 1/(2(V-1)), ...]
    dyadic where V - 1 is a power of two (q = [1/2, 0, ...] without q_off), p = q + residual off
    the draft."""
    R, V = len(residuals), residuals[0].shape[0]
    q = torch.full((V,), 0.5 / (V - 1) if q_off else 0.0, dtype=torch.float64)
    q[0] = 0.5
    d = torch.stack(residuals)
    p = q[None] + d
    p[:, 0] = 0.0
    return [torch.zeros(R, 1, dtype=torch.int64), q.expand(R, 1, V).clone(),
            torch.stack([p, torch.full_like(p, 1.0 / V)], 1), torch.ones(R, dtype=torch.int64),
            torch.full((R, 1), 0.5, dtype=torch.float64), torch.tensor(us, dtype=torch.float64)]


def _tie_rows(g, rows: int, V: int, normalized_differs: bool):
    """Dyadic d (multiples of 1/8) whose total is not a power of two, and u = cumsum[i] / total
    chosen where u * total == cumsum[i] exactly, so the rule takes the next index with mass. With
    normalized_differs, only rows where normalizing d first (d / d.sum(), then the rule, or
    cumsum / total > u) gives another index."""
    ds, us = [], []
    while len(ds) < rows:
        d = torch.randint(0, 9, (V,), generator=g).double() / 8
        if normalized_differs:
            d[0] = 0.0                                                   # residual rows: the draft's entry
        cs = d.cumsum(0)
        total = float(cs[-1])
        i = int(torch.randint(0, V - 1, (1,), generator=g))
        if total == 0 or cs[i] == 0 or cs[i] == total:
            continue
        u = float(cs[i]) / total
        ut = torch.tensor([u], dtype=torch.float64)
        want = _rule(d, u)
        alt = {int(_draw_rule(d[None] / d.sum(), ut)), int((cs / total <= u).sum())}
        if (cs <= u * total).sum() == (cs / total <= u).sum() and not normalized_differs:
            continue
        if normalized_differs and alt == {want}:
            continue
        ds.append(d)
        us.append(u)
    return ds, us


def _draw_rule(dist, u):
    cs = dist.cumsum(-1)
    idx = (cs <= (u * cs[:, -1])[:, None]).sum(-1)
    V = dist.shape[-1]
    last_pos = V - 1 - (dist > 0).flip(-1).to(torch.int64).argmax(-1)
    return torch.where(idx >= V, last_pos, idx)


def _rule(d: torch.Tensor, u: float) -> int:
    return int(_draw_rule(d[None].double(), torch.tensor([u], dtype=torch.float64)))


def _draw32_variants(d: torch.Tensor, u: float) -> set[int]:
    """Where the draw would land if its cumsum (and maybe u) were float32."""
    V = d.shape[0]
    cs = d.to(torch.float32).cumsum(0)
    a = int((cs <= torch.tensor(u, dtype=torch.float32) * cs[-1]).sum())            # all float32
    b = int((cs.double() <= u * cs[-1].double()).sum())                            # float32 cumsum only
    return {min(a, V - 1), min(b, V - 1)}


def _float32_draw_rows(g, rows: int, V: int, dtype):
    """Distributions (random, or float32) with u within a few ulps of a partial sum's share, kept
    only where a float32 draw gives another index than the float64 rule."""
    ds, us = [], []
    tries = 0
    while len(ds) < rows:
        tries += 1
        if tries > 100_000:
            raise AssertionError("grader bug: no float32-sensitive draw found")
        d = torch.softmax(2 * torch.randn(V, generator=g, dtype=torch.float64), 0).to(dtype).double()
        cs = d.cumsum(0)
        i = int(torch.randint(0, V - 1, (1,), generator=g))
        share = float(cs[i] / cs[-1])
        eps = [1e-12, 1e-10, 1e-9, 3e-8][int(torch.randint(0, 4, (1,), generator=g))]
        u = share * (1 + eps) if int(torch.randint(0, 2, (1,), generator=g)) else share * (1 - eps)
        if not 0 <= u < 1:
            continue
        want = _rule(d, u)
        if _draw32_variants(d, u) - {want}:
            ds.append(d)
            us.append(u)
    return ds, us


def _f32_residual_rows(g, rows: int, V: int):
    """Rows (K = n = 1, float32 probabilities) whose draft (token V - 1, p/q <= 0.4 < u) is
    rejected and where max(0, p - q) taken in float32, then widened, draws another index than in
    float64. q holds tiny masses (2**-25 .. 2**-40) beside p's O(1) ones, so p - q rounds to p in
    float32 and the residual's partial sums shift by about q; s lies between the two shares of a
    partial sum. A fresh student's verifier found this gap (float32 subtraction passed every case)."""
    ps, qs, us = [], [], []
    tries = 0
    while len(us) < rows:
        tries += 1
        if tries > 100_000:
            raise AssertionError("grader bug: no float32-sensitive residual found")
        p = torch.softmax(torch.randn(V, generator=g, dtype=torch.float64), 0).to(torch.float32)
        p[V - 1] *= 0.3
        q = torch.zeros(V, dtype=torch.float32)
        q[: V - 1] = 2.0 ** -torch.randint(25, 41, (V - 1,), generator=g).to(torch.float32)
        q[V - 1] = 0.75
        r64 = (p.double() - q.double()).clamp(min=0)
        r32 = (p - q).clamp(min=0).double()
        i = int(torch.randint(0, V - 1, (1,), generator=g))
        a, b = float(r64[: i + 1].sum() / r64.sum()), float(r32[: i + 1].sum() / r32.sum())
        u = (a + b) / 2
        if not 0 <= u < 1 or _rule(r64, u) == _rule(r32, u):
            continue
        ps.append(p)
        qs.append(q)
        us.append(u)
    R = len(us)
    p = torch.stack(ps)
    return [torch.full((R, 1), V - 1, dtype=torch.int64), torch.stack(qs)[:, None],
            torch.stack([p, p.flip(-1)], 1), torch.ones(R, dtype=torch.int64),
            torch.full((R, 1), 0.9999, dtype=torch.float64), torch.tensor(us, dtype=torch.float64)]


def _subnormal_rows(g, rows: int, V: int, residual: bool):
    """Masses that are multiples of the smallest subnormal (5e-324), the last entries 0, and u so
    close to 1 that u * total rounds to total: no partial sum exceeds it and the draw falls back
    to the last index with mass (not the last index, which has none)."""
    tiny = 5e-324
    ds, us = [], []
    while len(ds) < rows:
        k = torch.randint(0, 4, (V,), generator=g)
        k[-1] = 0
        if residual:
            k[0] = 0
        if int(torch.randint(0, 2, (1,), generator=g)):
            k[-2] = 0
        units = int(k.sum())
        if units == 0:
            continue
        d = k.double() * tiny
        u = 1.0 - 0.25 / units                                           # u * total rounds up to total
        if _rule(d, u) == V - 1 or int((d.cumsum(0) <= u * d.sum()).sum()) < V:
            continue
        ds.append(d)
        us.append(u)
    return ds, us


def _dyadic_batch(gen: torch.Generator, B: int, K: int, V: int):
    """Probabilities in quarters (exact in any order of summation), accept uniforms at 0, at p/q or
    random, and draw uniforms at a partial sum's share or random: the boundaries where a strict and
    a loose comparison part."""
    def quarters(*shape):
        k = torch.randint(0, 4, (*shape, V), generator=gen).double()
        k[..., 0] += (k.sum(-1) == 0).double()  # no row without mass
        return k / 4
    q, p = quarters(B, K), quarters(B, K + 1)
    drafts = torch.multinomial(q.reshape(-1, V), 1, generator=gen).reshape(B, K) if B * K else \
        torch.zeros(B, K, dtype=torch.int64)
    n = torch.randint(0, K + 1, (B,), generator=gen)
    ratio = (p[:, :K].gather(-1, drafts[..., None]) / q.gather(-1, drafts[..., None])).squeeze(-1)
    choice = torch.randint(0, 3, (B, K), generator=gen)
    au = torch.where(choice == 0, 0.0, torch.where((choice == 1) & (ratio < 1), ratio,
                                                   torch.rand(B, K, generator=gen, dtype=torch.float64)))
    share = p[:, 0].cumsum(-1) / p[:, 0].sum(-1, keepdim=True)
    pick = torch.randint(0, V, (B,), generator=gen)
    su = torch.where(torch.rand(B, generator=gen) < 0.5, share.gather(-1, pick[:, None]).squeeze(-1).clamp(max=0.75),
                     torch.rand(B, generator=gen, dtype=torch.float64))
    return [drafts, q, p, n, au, su]


_CE_KINDS = {"verify: ": "random", "verify: float32 inputs": "float32-boundary", "verify: draw ties": "draw-ties",
             "verify: residual draw ties": "residual-ties", "verify: draws decided in float64": "float64-draws",
             "verify: subnormal": "subnormal", "verify: u ": "dyadic", "verify: draw tie": "dyadic",
             "verify: all drafts": "dyadic", "verify: residual that sums": "dyadic"}


def counterexample(g: Grading, trial: Trial) -> bool | None:
    """A small fresh batch for ``verify`` of the kind a failed case tests (random, float32
    boundaries, draw ties, subnormal masses, quarter probabilities with uniforms on the
    boundaries). ``is_lossless`` answers about hidden verifiers: no small input shows those."""
    kind = trial.pick(_CE_KINDS)
    if kind is None:
        return False
    gen, B, V = trial.generator(), trial.size, 2 + trial.rng.randrange(1 + trial.size)
    K = trial.rng.randint(0, 3) if kind != "float32-boundary" else trial.rng.randint(1, 3)
    args = {"random": lambda: _batch(gen, B, K, V, dtype=trial.rng.choice([torch.float64, torch.float32]),
                                     garbage=trial.rng.random() < 0.5, zeros=trial.rng.choice([0.0, 0.5])),
            "dyadic": lambda: _dyadic_batch(gen, B, K, V),
            "float32-boundary": lambda: _f32_near_boundary(gen, B, K, V),
            "draw-ties": lambda: _bonus_rows(*_tie_rows(gen, B, V + 1, normalized_differs=False)),
            "residual-ties": lambda: _residual_rows(*_tie_rows(gen, B, 5, normalized_differs=True)),
            "float64-draws": lambda: _bonus_rows(*_float32_draw_rows(gen, B, V + 1, torch.float64)),
            "subnormal": lambda: _bonus_rows(*_subnormal_rows(gen, B, V + 2, residual=False))}[kind]()
    _check_verify(g, g.reference(), args)
    return None


def _check_verify(g: Grading, ref, args, what: str = "") -> None:
    dev = [a.to(g.device) for a in args]
    g.show_input(**dict(zip(("draft_token_ids", "draft_probs", "target_probs", "num_draft_tokens", "accept_uniforms",
                             "sample_uniforms"), args)))
    got = g.call("verify", *dev)
    want_ids, want_num = ref.verify(*args)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail("verify must return a tuple (output_ids, num_emitted)")
    expect_tensor(got[1], want_num.to(g.device), name="num_emitted")
    expect_tensor(got[0], want_ids.to(g.device), name="output_ids")


def _one(q, p, x, n, au, su):
    """One row from lists (dyadic probabilities: exact in any summation order)."""
    K = len(q)
    return [torch.tensor([x + [0] * (K - len(x))]), torch.tensor([q], dtype=torch.float64),
            torch.tensor([p], dtype=torch.float64), torch.tensor([n]),
            torch.tensor([au], dtype=torch.float64), torch.tensor([su], dtype=torch.float64)]


def _part1_core(g: Grading, ref) -> None:
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
    with g.case("verify: V = 1 (every draft is token 0), ragged rows whose padding holds junk ids"):
        _check_verify(g, ref, _batch(g.rng(215), 16, 3, 1, garbage=True))

    with g.case("verify: u = 0 with target probability 0 rejects (sglang #35771)"):
        _check_verify(g, ref, _one([[0.5, 0.5]], [[0.0, 1.0], [0.25, 0.75]], [0], 1, [0.0], 0.0))
    with g.case("verify: u equal to p/q rejects"):
        _check_verify(g, ref, _one([[0.5, 0.5]], [[0.25, 0.75], [0.5, 0.5]], [0], 1, [0.5], 0.5))
    with g.case("verify: draw tie u*total == cumsum[i] takes the next index"):
        # bonus from [.25, .25, .5] with s = .5: partial sums [.25, .5, 1]; .5 is not > .5, so index 2
        _check_verify(g, ref, _one([[0.5, 0.25, 0.25]], [[0.25, 0.25, 0.5], [0.25, 0.25, 0.5]], [0], 0, [0.75], 0.5))
        # rejected draft 0 (p/q = .5 <= .75), residual [.25, 0, .25] with s = .5: index 2, not 0
        _check_verify(g, ref, _one([[0.25, 0.5, 0.25]], [[0.5, 0.25, 0.5], [1.0, 0.0, 0.0]], [1], 1, [0.75], 0.5))
        _check_verify(g, ref, _one([[0.5, 0.5, 0.0]], [[0.5, 0.0, 0.5], [0.5, 0.0, 0.5]], [0], 0, [0.0], 0.5))
    with g.case("verify: all drafts accepted emits n + 1 tokens, the bonus from column n"):
        _check_verify(g, ref, _one([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]],
                                   [[0.5, 0.5], [0.5, 0.5], [0.0, 1.0], [1.0, 0.0]], [1, 0], 2, [0.25, 0.75, 0.0], 0.0))
    with g.case("verify: residual that sums to 0 falls back to the target"):
        # target row not normalized: p = q/2, so p/q = 0.5 and max(0, p - q) is all zeros
        _check_verify(g, ref, _one([[0.5, 0.25, 0.25]], [[0.25, 0.125, 0.125], [0.5, 0.5, 0.0]], [1], 1, [0.75], 0.5))

    with g.case("verify: float32 inputs, u just below p/q (the accept test in float64)"):
        # p/q = .25/.75 = 0.333...3 in float64 > u = 0.33333333 (accept, then bonus 1); in float32 the
        # quotient and u both round to 0.33333334 and the draft would be rejected
        args = _one([[0.75, 0.25]], [[0.25, 0.75], [0.5, 0.5]], [0], 1, [0.33333333], 0.5)
        args[1], args[2] = args[1].float(), args[2].float()
        _check_verify(g, ref, args)
        _check_verify(g, ref, _f32_near_boundary(g.rng(207), 64, 3, 6))
    with g.case("verify: float32 inputs, the residual max(0, p - q) taken in float64"):
        # draft 2 rejected (p/q = .1/.75 <= u = .9); residual [1 - 2**-30, .5, 0] in float64, but
        # [1, .5, 0] if p - q is taken in float32: with s = 2/3 - 1e-11 float64 draws index 1 (the
        # first partial sum's share is 2/3 - 2.1e-10 <= s), float32 index 0 (its share is 2/3)
        args = _one([[2.0 ** -30, 0.0, 0.75]], [[1.0, 0.5, 0.1], [0.25, 0.25, 0.5]], [2], 1, [0.9], 2 / 3 - 1e-11)
        args[1], args[2] = args[1].float(), args[2].float()
        _check_verify(g, ref, args)
        _check_verify(g, ref, _f32_residual_rows(g.rng(216), 24, 6))
    with g.case("verify: float64 inputs kept in float64 (p/q not rounded through float32)"):
        # p = q at the draft: p/q is exactly 1 > u = 0.99999999 (accept, bonus 1). Rounded to float32
        # first, q = 0.1 becomes 0.10000000149 and p = 0.9 becomes 0.89999998: either quotient drops
        # below u and the draft is rejected
        _check_verify(g, ref, _one([[0.1, 0.9]], [[0.1, 0.9], [0.5, 0.5]], [0], 1, [0.99999999], 0.5))
        _check_verify(g, ref, _one([[0.9, 0.1]], [[0.9, 0.1], [0.5, 0.5]], [0], 1, [0.99999999], 0.5))
        _check_verify(g, ref, _f64_near_boundary(g.rng(214), 64, 3, 6))
    with g.case("verify: draw ties (u*total equal to a partial sum) with totals that are not powers of two"):
        # [0, .625, .125] with s = 0.8333333333333333: s*.75 == .625 exactly, so index 2; the
        # normalized partial sum .625/.75 rounds to 0.8333333333333334 > s and would give index 1
        _check_verify(g, ref, [torch.zeros(1, 0, dtype=torch.int64), torch.zeros(1, 0, 3, dtype=torch.float64),
                               torch.tensor([[[0.0, 0.625, 0.125]]], dtype=torch.float64), torch.tensor([0]),
                               torch.zeros(1, 0, dtype=torch.float64),
                               torch.tensor([0.8333333333333333], dtype=torch.float64)])
        _check_verify(g, ref, _bonus_rows(*_tie_rows(g.rng(208), 12, 6, normalized_differs=False)))
    with g.case("verify: residual draw ties (the residual is not renormalized before the draw)"):
        # draft 0 has p = 0 (always rejected); residual [0, .625, .125] with s = 0.8333333333333333:
        # s * .75 == .625, so index 2; the renormalized residual [0, .8333333333333334, ...] gives 1
        _check_verify(g, ref, _residual_rows([torch.tensor([0.0, 0.625, 0.125], dtype=torch.float64)],
                                             [0.8333333333333333]))
        _check_verify(g, ref, _residual_rows(*_tie_rows(g.rng(209), 12, 5, normalized_differs=True)))
    with g.case("verify: draws decided in float64 (u within a few ulps of a partial sum's share)"):
        _check_verify(g, ref, _bonus_rows(*_float32_draw_rows(g.rng(210), 16, 7, torch.float64)))
        _check_verify(g, ref, _bonus_rows(*_float32_draw_rows(g.rng(211), 16, 7, torch.float32), dtype=torch.float32))
    with g.case("verify: subnormal masses: the draw falls back to the last index with mass"):
        # [5e-324, 5e-324, 0, 0] with s = 0.9: s * 1e-323 rounds to 1e-323, no partial sum is
        # above it, and the fallback is index 1 (the last with mass), not index 3
        _check_verify(g, ref, _bonus_rows([torch.tensor([5e-324, 5e-324, 0.0, 0.0], dtype=torch.float64)], [0.9]))
        _check_verify(g, ref, _bonus_rows(*_subnormal_rows(g.rng(212), 8, 6, residual=False)))
        _check_verify(g, ref, _residual_rows(*_subnormal_rows(g.rng(213), 8, 5, residual=True), q_off=False))


def _part1_input_checks(g: Grading, ref) -> None:
    with g.case("verify raises ValueError: q = 0 at a draft after a guaranteed rejection", group=INPUT_CHECKS):
        # draft 0 has p = 0 so it is always rejected; draft 1 has q = 0 -> the error checks cover every j < n
        args = _one([[0.5, 0.5], [1.0, 0.0]], [[0.0, 1.0], [0.5, 0.5], [0.5, 0.5]], [0, 1], 2, [0.5, 0.5], 0.5)
        g.raises("ValueError", "verify", *[a.to(g.device) for a in args])

    base = _batch(g.rng(300), 4, 3, 5, ragged=False)
    idx = lambda *ix: tuple(torch.tensor([i]) for i in ix)  # noqa: E731
    bad = {
        "draft_probs with the wrong V": (1, lambda t: t[..., :4]),
        "target_probs without the bonus column": (2, lambda t: t[:, :3]),
        "num_draft_tokens of the wrong length": (3, lambda t: t[:3]),
        "accept_uniforms of the wrong shape": (4, lambda t: t[:, :2]),
        "sample_uniforms of the wrong length": (5, lambda t: t[:2]),
        "draft_token_ids that is not 2-D": (0, lambda t: t.reshape(-1)),
        "num_draft_tokens = -1": (3, lambda t: torch.tensor([3, -1, 0, 2])),
        "num_draft_tokens = K + 1": (3, lambda t: torch.tensor([3, 4, 0, 2])),
        "a negative probability": (2, lambda t: t.index_put(idx(1, 3, 2), torch.tensor(-0.25, dtype=t.dtype))),
        "a NaN probability": (1, lambda t: t.index_put(idx(2, 0, 4), torch.tensor(float("nan"), dtype=t.dtype))),
        "a drafted token with q = 0": (1, lambda t: t.scatter(-1, base[0][..., None], 0.0)),
        "a drafted token id outside [0, V)": (0, lambda t: t.index_put(idx(0, 1), torch.tensor(5))),
        "a drafted token id of 2**32 (outside [0, V), 0 if cast to int32)":
            (0, lambda t: t.index_put(idx(2, 0), torch.tensor(1 << 32))),
        "draft_probs with K + 1 draft columns (B, K+1, V)": (1, lambda t: torch.cat([t, t[:, :1]], 1)),
    }
    for what, (i, f) in bad.items():
        with g.case(f"verify raises ValueError: {what}", group=INPUT_CHECKS):
            args = list(base)
            args[i] = f(args[i])
            g.raises("ValueError", "verify", *[a.to(g.device) for a in args])

    with g.case("verify raises ValueError: V = 0 (a vocabulary without tokens)", group=INPUT_CHECKS):
        # K = 0 and n = 0: no drafted id to check, so only the V >= 1 check can raise ValueError
        args = [torch.zeros(4, 0, dtype=torch.int64), torch.zeros(4, 0, 0, dtype=torch.float64),
                torch.zeros(4, 1, 0, dtype=torch.float64), torch.zeros(4, dtype=torch.int64),
                torch.zeros(4, 0, dtype=torch.float64), torch.full((4,), 0.5, dtype=torch.float64)]
        g.raises("ValueError", "verify", *[a.to(g.device) for a in args])

    # Padding columns (j >= n for draft_probs, j > n for target_probs) are never drawn from, but
    # the statement's checks cover every value of both tensors.
    ragged = list(base)
    ragged[3] = torch.tensor([3, 1, 0, 2])
    with g.case("verify raises ValueError: NaN or a negative value in a padding column", group=INPUT_CHECKS):
        for i, ix, v in ((1, idx(1, 2, 0), float("nan")), (2, idx(2, 3, 4), -0.5),
                         (1, idx(2, 0, 3), -1e-300), (2, idx(1, 2, 1), float("nan"))):
            args = list(ragged)
            args[i] = args[i].index_put(ix, torch.tensor(v, dtype=args[i].dtype))
            g.raises("ValueError", "verify", *[a.to(g.device) for a in args])


# -- part 2 -------------------------------------------------------------------------------------
VOCABS = (3, 4, 5, 6, 8)
# Vocabulary sizes a biased specimen is asked about, where not all of VOCABS. The two joint-only
# biases are weak at V = 3 (only 27 joint cells, and the three scenarios' Markov rows can all be
# close to each other, so the first token's link to the next carries little): the reference test
# saw margins down to 1.4 sd there (see the module docstring). From V = 4 on they are far clear.
SPECIMEN_VOCABS: dict[str, tuple[int, ...]] = {"swap_first": (4, 5, 6, 8), "decouple_first": (4, 5, 6, 8)}
# Each lossless specimen features one choice (the rest of its style is random), so every way of
# drawing differently from part 1 is asked about in every grading.
LOSSLESS_FEATURES = ({}, {"accept": "exact"}, {"accept": "onehot"}, {"draw": "gumbel"},
                     {"draw": "multinomial"}, {"bonus": False}, {"uniforms": "own"})


def _random_style(rnd: random.Random, accepts: tuple[str, ...], fixed: dict) -> Style:
    s = dict(uniforms=rnd.choice(("given", "own")), accept=rnd.choice(accepts),
             draw=rnd.choice(("icdf", "icdf", "gumbel", "multinomial")), bonus=rnd.random() < 0.75)
    s.update(fixed)
    return Style(**s)


def _specimens(rnd: random.Random) -> list[tuple[str | None, Style]]:
    out = [(None, _random_style(rnd, ("ratio", "onehot", "exact"), f)) for f in LOSSLESS_FEATURES]
    for bias, (accepts, forced) in BIASES.items():
        out.append((bias, _random_style(rnd, accepts, forced)))
    rnd.shuffle(out)
    return out


def _ask(g: Grading, spec: Specimen, V: int, seed: int):
    got = g.call("is_lossless", g.host(spec, ["__call__"]), V, seed)
    if not isinstance(got, bool):
        fail(f"is_lossless must return a bool, got {type(got).__name__}")
    return got


def _part2(g: Grading, ref) -> None:
    rnd = random.Random(f"speculative-verifier part 2:{g.salt}")
    for i, (bias, style) in enumerate(_specimens(rnd), 1):
        with g.case(f"is_lossless #{i}"):
            V = rnd.choice(SPECIMEN_VOCABS.get(bias, VOCABS))
            seed = rnd.randrange(1 << 31)
            spec = Specimen(ref, style, bias, seed=rnd.randrange(1 << 62), rotation=(rnd.random(), rnd.random()),
                            vocab_size=V)
            got = _ask(g, spec, V, seed)
            if got != (bias is None):
                fail(f"is_lossless returned {got}, but this verifier is {DESCRIPTION[bias]} "
                     f"(style: {_style_text(style)}; vocab_size={V}, {spec.calls} verifier calls)")

    # The seed cases: a deterministic lossless verifier (the given uniforms through a secret
    # rotation, inverse-CDF draws) gives the same outputs on the same inputs, so a test sends it the
    # same calls in two runs exactly when the two runs are the same test. With seed a twice the
    # calls must be identical (a test seeded from the clock or the OS is not reproducible); with
    # seeds a and b they must differ (a test that ignores its seed is a fixed probe, which is what
    # a lookup table of verifier outputs needs).
    style = _random_style(rnd, ("ratio", "onehot"), {"uniforms": "given", "draw": "icdf"})
    V = rnd.choice(VOCABS)
    rotation = (rnd.random(), rnd.random())
    seeds = rnd.sample(range(1 << 31), 2)

    def run(seed: int) -> list[str]:
        spec = Specimen(ref, style, None, rotation=rotation, vocab_size=V, record=True)
        got = _ask(g, spec, V, seed)
        if got is not True:
            fail(f"is_lossless returned {got}, but this verifier is lossless (style: {_style_text(style)}; "
                 f"vocab_size={V}, seed={seed})")
        return spec.digests

    first: list[list[str]] = []
    with g.case("is_lossless: the same seed gives the same test"):
        first.append(run(seeds[0]))
        again = run(seeds[0])
        if again != first[0]:
            same = sum(a == b for a, b in zip(first[0], again))
            fail(f"asked twice with seed {seeds[0]} about the same deterministic verifier, is_lossless sent "
                 f"{len(first[0])} then {len(again)} call(s), {same} of them identical: the same seed must give "
                 "the same test (seed the generator with `seed`, not from the clock or the OS)")
    with g.case("is_lossless: two seeds give two different tests"):
        runs = [first[0] if first else run(seeds[0]), run(seeds[1])]
        if runs[0] == runs[1]:
            fail(f"is_lossless sent the verifier exactly the same {len(runs[0])} call(s) for seeds {seeds[0]} and "
                 f"{seeds[1]}: draw the test's randomness from `seed`")


def grade(g: Grading) -> None:
    ref = g.reference()
    _part1_core(g, ref)
    _part2(g, ref)
    _part1_input_checks(g, ref)
