"""Public cases for kv-quant-keys-values (literal expected values)."""

import torch

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, expect_tensor


def grade(g: Grading) -> None:
    dev = g.device
    with g.case("statement-example-ties"):
        codes, scale, zero = g.call("quantize_groups", torch.tensor([[0.0, 0.5, 1.5, 3.0]], device=dev),
                                    2, 4, "per_token")
        expect_tensor(codes, torch.tensor([[0, 0, 2, 3]], dtype=torch.uint8, device=dev), name="codes")
        expect_tensor(scale, torch.tensor([[1.0]], dtype=torch.float64, device=dev), name="scale")
        expect_tensor(zero, torch.tensor([[0.0]], dtype=torch.float64, device=dev), name="zero")
    with g.case("per-channel-keys"):
        # two channels, groups of 2 tokens: channel 1 is an outlier channel (values near 12)
        k = torch.tensor([[0.0, 12.0], [1.0, 13.0], [-1.0, 12.5], [1.0, 11.0]], device=dev)
        codes, scale, zero = g.call("quantize_groups", k, 2, 2, "per_channel")
        expect_tensor(codes, torch.tensor([[0, 0], [3, 3], [0, 3], [3, 0]], dtype=torch.uint8, device=dev),
                      name="codes")
        expect_tensor(scale, torch.tensor([[1 / 3, 1 / 3], [2 / 3, 0.5]], dtype=torch.float64, device=dev),
                      name="scale", rtol=1e-12)
        expect_tensor(zero, torch.tensor([[0.0, 12.0], [-1.0, 11.0]], dtype=torch.float64, device=dev),
                      name="zero")
    with g.case("kivi-bookkeeping-R128"):
        gen = torch.Generator().manual_seed(0)
        H, D = 1, 8
        kp, vp = torch.randn(H, 300, D, generator=gen), torch.randn(H, 300, D, generator=gen)
        qs, ks, vs = (torch.randn(84, H, D, generator=gen) for _ in range(3))
        r = g.call("kivi_decode", kp.to(dev), vp.to(dev), qs.to(dev), ks.to(dev), vs.to(dev), 2, 2, 8, 128)
        expect_equal(r["counts"][0], [256, 44, 172, 128], name="counts after prefill")
        expect_equal(r["counts"][83], [256, 127, 255, 128], name="counts after 83 steps")
        expect_equal(r["counts"][84], [384, 0, 256, 128], name="counts after 84 steps")
        expect_close(r["nbytes"][0], 5320.0, name="nbytes after prefill", rtol=1e-12)
    with g.case("rejects-residual-not-multiple-of-group", group=INPUT_CHECKS):
        z = torch.zeros(1, 4, 8, device=dev)
        s = torch.zeros(0, 1, 8, device=dev)
        g.raises("ValueError", "kivi_decode", z, z, s, s, s, 2, 2, 8, 12)
