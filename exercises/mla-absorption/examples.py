"""Public cases: a small float64 decode with a ragged cache, and DeepSeek-V3's bill on an H100."""

import torch

from inferprep.grading import Grading, expect_close, expect_equal, expect_tensor
from inferprep.specs import DEEPSEEK_V3, H100_SXM


def _small(dev):
    # B = 1, H = 2, dn = 2, dr = 1, dv = 2, r = 2, S = 3, all hand-picked
    q_nope = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)
    q_pe = torch.tensor([[[1.0], [0.0]]], dtype=torch.float64)
    c_kv = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]], dtype=torch.float64)
    k_pe = torch.tensor([[[0.0], [1.0], [0.0]]], dtype=torch.float64)
    w_uk = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]], dtype=torch.float64)
    w_uv = torch.tensor([[[2.0, 0.0], [0.0, 2.0]], [[1.0, 1.0], [1.0, -1.0]]], dtype=torch.float64)
    return [t.to(dev) for t in (q_nope, q_pe, c_kv, k_pe, w_uk, w_uv)]


def _expected(dev):
    # Head 0: scores (x 1/sqrt(3)) over tokens 0, 1: [1, 1] (token 2 is padding) -> p = [.5, .5]
    #   o = W_UV0 (0.5 c_0 + 0.5 c_1) = 2 * [0.5, 0.5] = [1, 1]
    # Head 1: W_UK1 swaps the latent's coordinates; q_nope1 = [0, 1] -> scores [1, 0] / sqrt(3)
    e = torch.exp(torch.tensor(1.0 / 3 ** 0.5, dtype=torch.float64))
    p0, p1 = e / (e + 1), 1 / (e + 1)
    o1 = torch.stack([p0 + p1, p0 - p1])
    return torch.stack([torch.tensor([1.0, 1.0], dtype=torch.float64), o1])[None].to(dev)


def grade(g: Grading) -> None:
    lens = torch.tensor([2]).to(g.device)
    for entry in ("mla_decode_naive", "mla_decode_absorbed"):
        with g.case(f"{entry} small"):
            out = g.call(entry, *_small(g.device), cache_lens=lens)
            expect_tensor(out, _expected(g.device), rtol=1e-9, atol=1e-12)
    with g.case("DeepSeek-V3 cost"):
        naive = g.call("mla_decode_cost", DEEPSEEK_V3, "naive")
        absorbed = g.call("mla_decode_cost", DEEPSEEK_V3, "absorbed")
        expect_equal(naive["flops_per_cached_token"], 33_636_352)
        expect_equal(absorbed["flops_per_cached_token"], 278_528)
        expect_close(absorbed["bytes_per_cached_token"], 1152.0, rtol=1e-12)
    with g.case("DeepSeek-V3 on H100"):
        got = g.call("mla_regime", DEEPSEEK_V3, H100_SXM, "absorbed")
        expect_close(got["ridge"], 989.4e12 / 3.35e12, rtol=1e-9)
        expect_equal(got["regime"], "memory-bound")
