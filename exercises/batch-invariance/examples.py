"""Public cases for batch-invariance (literal expected values)."""

import torch

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, expect_tensor, fail


def grade(g: Grading) -> None:
    dev = g.device
    victim = torch.tensor([[1.0, -2.0, 0.5, 0.25]], device=dev)
    batch = torch.tensor([[1.0, -2.0, 0.5, 0.25], [127.0, 3.0, -1.0, 2.5]], device=dev)
    alone = torch.tensor([[1.0078740119934082, -2.0, 0.5039370059967041, 0.25196850299835205]], device=dev)
    with g.case("statement-example-alone"):
        for mode in ("int8_tensor", "int8_token"):
            expect_tensor(g.call("quantize_activations", victim, mode), alone, name=f"x_hat {mode}")
    with g.case("statement-example-batched"):
        got = g.call("quantize_activations", batch, "int8_tensor")
        expect_tensor(got[:1], torch.tensor([[1.0, -2.0, 0.0, 0.0]], device=dev), name="int8_tensor row 0")
        got = g.call("quantize_activations", batch, "int8_token")
        expect_tensor(got[:1], alone, name="int8_token row 0")
        expect_tensor(got[1:], torch.tensor([[127.0, 3.0, -1.0, 2.0]], device=dev), name="int8_token row 1")
    with g.case("fp8-per-token-example"):
        got = g.call("quantize_activations", batch, "fp8_token")
        expect_tensor(got, torch.tensor([[1.0, -2.0, 0.5, 0.25],
                                         [127.0, 3.1183035373687744, -0.9921875, 2.5513391494750977]],
                                        device=dev), name="x_hat fp8_token")
    with g.case("cross-talk-example"):
        w = torch.tensor([[1.0, 0.0, 0.0, 4.0], [0.0, -1.0, 2.0, 0.0]], device=dev)
        for mode, want in (("int8_tensor", 0.33769633300353885), ("fp8_tensor", 0.0078125),
                           ("int8_token", 0.0), ("none", 0.0)):
            r = g.call("cross_talk", victim, batch[1:], w, mode)
            expect_close(r["max_rel_change"], want, name=f"max_rel_change {mode}", rtol=1e-6, atol=1e-12)
            expect_equal(r["flips"], 0, name=f"flips {mode}")
    with g.case("linear-row-alone-equals-row-in-batch"):
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(64, 128, generator=gen)
        w = torch.randn(256, 128, generator=gen)
        one = g.call("quantized_linear", x[:1].to(dev), w.to(dev), "fp8_token")
        many = g.call("quantized_linear", x.to(dev), w.to(dev), "fp8_token")
        if not torch.equal(one[0].cpu(), many[0].cpu()):
            fail("row 0 alone and row 0 in a batch of 64 differ: not batch invariant")
    with g.case("rejects-unknown-mode", group=INPUT_CHECKS):
        g.raises("ValueError", "quantize_activations", victim, "int4_token")
