"""Public cases of speculative-verifier: the statement's example, the greedy case, one error, and
part 2 on two public verifiers (a lossless one and one that resamples from p on rejection)."""

import torch

from inferprep.grading import Grading, expect_tensor, fail


class PublicVerifier:
    """A vectorized verifier for part 2's public cases; ``resample_from_p`` makes it biased."""

    def __init__(self, resample_from_p: bool):
        self.resample_from_p = resample_from_p

    def __call__(self, tok, q_all, p_all, n, au, su):
        B, K = tok.shape
        p_all, q_all = p_all.double(), q_all.double()
        rows, cols = torch.arange(B), torch.arange(K)
        live = cols[None] < n[:, None]
        tok = torch.where(live, tok, 0)
        p = p_all[:, :K].gather(-1, tok[..., None])[..., 0]
        q = q_all.gather(-1, tok[..., None])[..., 0]
        acc = live & (au < p / torch.where(live, q, 1.0))
        m = acc.long().cumprod(-1).sum(-1)
        dist = p_all[rows, m]
        if K:
            res = (dist - q_all[rows, m.clamp(max=K - 1)]).clamp(min=0)
            if not self.resample_from_p:
                dist = torch.where(((m < n) & (res.sum(-1) > 0))[:, None], res, dist)
        cs = dist.cumsum(-1)
        last = (cs <= (su * cs[:, -1])[:, None]).sum(-1).clamp(max=dist.shape[-1] - 1)
        out = torch.where(cols[None] < m[:, None], tok, -1)
        out = torch.cat([out, torch.full((B, 1), -1)], 1)
        out[rows, m] = last
        return out, m + 1


def _t(x, dtype=torch.float64):
    return torch.tensor(x, dtype=dtype)


def grade(g: Grading) -> None:
    with g.case("statement example"):
        args = [_t([[1, 0], [2, -1]], torch.int64),
                _t([[[.25, .5, .25], [.25, .25, .5]], [[.25, .25, .5], [1 / 3, 1 / 3, 1 / 3]]]),
                _t([[[.5, .25, .25], [.5, .25, .25], [.5, .25, .25]],
                    [[.25, .25, .5], [0, .5, .5], [1 / 3, 1 / 3, 1 / 3]]]),
                _t([2, 1], torch.int64), _t([[.75, .1], [.3, .9]]), _t([.3, .5])]
        ids, num = g.call("verify", *[a.to(g.device) for a in args])
        expect_tensor(num, _t([1, 2], torch.int64).to(g.device), name="num_emitted")
        expect_tensor(ids, _t([[0, -1, -1], [2, 2, -1]], torch.int64).to(g.device), name="output_ids")

    with g.case("greedy: one-hot targets keep drafts up to the first mismatch, then the target's token"):
        V = 4
        target = torch.nn.functional.one_hot(_t([[2, 1, 3, 0]], torch.int64), V).double()
        draft = torch.full((1, 3, V), 0.25, dtype=torch.float64)
        args = [_t([[2, 0, 3]], torch.int64), draft, target, _t([3], torch.int64),
                _t([[0.0, 0.0, 0.0]]), _t([0.99])]
        ids, num = g.call("verify", *[a.to(g.device) for a in args])
        expect_tensor(num, _t([2], torch.int64).to(g.device), name="num_emitted")
        expect_tensor(ids, _t([[2, 1, -1, -1]], torch.int64).to(g.device), name="output_ids")

    with g.case("a drafted token with q = 0 raises ValueError"):
        args = [_t([[1]], torch.int64), _t([[[1.0, 0.0]]]), _t([[[.5, .5], [.5, .5]]]),
                _t([1], torch.int64), _t([[0.5]]), _t([0.5])]
        g.raises("ValueError", "verify", *[a.to(g.device) for a in args])

    for biased in (False, True):
        name = "resamples from p on rejection (biased)" if biased else "follows the part-1 rule (lossless)"
        with g.case(f"is_lossless: a verifier that {name}"):
            got = g.call("is_lossless", g.host(PublicVerifier(biased), ["__call__"]), 5, 1234)
            if got is not (not biased):
                fail(f"expected {not biased}, got {got!r}")
