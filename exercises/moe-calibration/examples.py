"""Public cases for moe-calibration (the statement's examples and a small GPTQ case)."""

import torch

from inferprep.grading import Grading, expect_close, expect_equal, expect_tensor, fail


def grade(g: Grading) -> None:
    dev = g.device
    with g.case("statement-expected-tokens"):
        out = g.call("expected_tokens", [1 / 256] * 256, 262144, 8)
        if not isinstance(out, dict) or set(out) != {"expected", "p_zero"}:
            fail("expected a dict with the keys 'expected' and 'p_zero'")
        expect_close(out["expected"][0], 8192.0, rtol=1e-9, name="['expected'][0]")
        expect_close(out["p_zero"][0], (1 - 8 / 256) ** 262144, rtol=1e-6, atol=1e-300, name="['p_zero'][0]")
    with g.case("statement-rtn"):
        W = torch.tensor([[-3.0, 12.0, 2.5, 0.5, -1.5, 7.5, 0.0, 4.5]], dtype=torch.float64, device=dev)
        want = torch.tensor([[-3.0, 12.0, 2.0, 0.0, -2.0, 8.0, 0.0, 4.0]], dtype=torch.float64, device=dev)
        expect_tensor(g.call("rtn_quantize", W, 4), want, rtol=0, atol=1e-12)
    with g.case("counts-tie-row"):
        logits = torch.tensor([[1.0, 1.0, 1.0, 0.0], [0.0, 2.0, 2.0, 2.0]], device=dev)
        expect_equal(g.call("expert_token_counts", logits, 2), [1, 2, 1, 0], name="counts")
    with g.case("gptq-correlated-columns"):
        # columns 2 and 3 always see the same input: GPTQ pushes column 2's rounding error into
        # column 3, keeping their sum (1.625 -> 2), where rounding each alone gives 1.
        W = torch.tensor([[-3.0, 12.0, 0.375, 1.25]], dtype=torch.float64, device=dev)
        X = torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]],
                         dtype=torch.float64, device=dev)
        want = torch.tensor([[-3.0, 12.0, 0.0, 2.0]], dtype=torch.float64, device=dev)
        expect_tensor(g.call("gptq_quantize", W, X, 4, 0.01, 128, False), want, rtol=0, atol=1e-12)
    with g.case("plan"):
        out = g.call("calibration_plan", [128, 127, 0, 64], [0, 1, 128, 63], 128, 1.0)
        expect_equal(out, ["gptq", "gptq_targeted", "gptq_targeted", "rtn"], name="plan")
    with g.case("no-tokens-is-rtn"):
        W = torch.tensor([[-3.0, 12.0, 2.5, 0.5]], dtype=torch.float64, device=dev)
        out = g.call("gptq_quantize", W, torch.zeros(0, 4, dtype=torch.float64, device=dev), 4)
        want = torch.tensor([[-3.0, 12.0, 2.0, 0.0]], dtype=torch.float64, device=dev)
        expect_tensor(out, want, rtol=0, atol=1e-12)
