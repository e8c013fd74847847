"""Public cases: the statement's figures and its demo model (hosted here as in the hidden run)."""

import math

import torch

from inferprep.grading import Grading, expect_close, expect_equal, fail
from inferprep.sim.running_sum_model import demo_model


def grade(g: Grading) -> None:
    for inc, dt, want in [(1.0, torch.bfloat16, 256.0), (1.0, torch.float16, 2048.0),
                          (0.01, torch.bfloat16, 4.0), (1000.0, torch.float16, math.inf)]:
        with g.case(f"stall {inc} {dt}"):
            expect_close(g.call("stall_value", inc, dt), want, rtol=0.0)

    model = demo_model()
    handle = g.host(model, ["error"], {"names": list(model.names), "max_len": model.max_len})
    with g.case("demo culprit"):
        model.calls = 0
        expect_equal(g.call("find_culprit", handle, 4096, 0.05), "layers.2.softmax_denominator")
        if model.calls > math.ceil(math.log2(len(model.names))) + 1:
            fail(f"{model.calls} calls to model.error: over the budget")
    with g.case("demo first bad length"):
        model.calls = 0
        expect_equal(g.call("first_bad_length", handle, 0.05, []), 367)
        if model.calls > math.ceil(math.log2(model.max_len)) + 2:
            fail(f"{model.calls} calls to model.error: over the budget")
    with g.case("demo fixed"):
        got = g.call("first_bad_length", handle, 0.05, ["layers.2.softmax_denominator"])
        if got is not None:
            fail(f"expected None after the fix, got {got!r}")
    with g.case("rejects increment 0"):
        g.raises("ValueError", "stall_value", 0.0, torch.bfloat16)
