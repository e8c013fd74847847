"""Public examples for rope (run them with `inferprep grade --public`)."""

import torch

from inferprep.grading import Grading, expect_tensor, fail


def grade(g: Grading) -> None:
    dev = g.device
    one = torch.ones(1, 1, dtype=torch.int64, device=dev)
    with g.case("x-1-2-3-4-half-split"):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], device=dev).view(1, 1, 1, 4)
        expect_tensor(g.call("apply_rope", x, one), torch.tensor([-1.9841, 1.9599, 2.4624, 4.0198], device=dev).view(1, 1, 1, 4),
                      atol=1e-4)
    with g.case("x-1-2-3-4-interleaved"):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], device=dev).view(1, 1, 1, 4)
        expect_tensor(g.call("apply_rope", x, one, interleaved=True),
                      torch.tensor([-1.1426, 1.9221, 2.9599, 4.0298], device=dev).view(1, 1, 1, 4), atol=1e-4)
    with g.case("x-1-0-0-0-both"):
        x = torch.tensor([1.0, 0.0, 0.0, 0.0], device=dev).view(1, 1, 1, 4)
        expect_tensor(g.call("apply_rope", x, one, interleaved=True),
                      torch.tensor([0.5403, 0.8415, 0.0, 0.0], device=dev).view(1, 1, 1, 4), atol=1e-4, name="interleaved")
        expect_tensor(g.call("apply_rope", x, one, interleaved=False),
                      torch.tensor([0.5403, 0.0, 0.8415, 0.0], device=dev).view(1, 1, 1, 4), atol=1e-4, name="half-split")
    with g.case("cos-at-15962-is-not-cos-at-15936"):
        out = g.call("rope_cos_sin", torch.tensor([15962], device=dev), 2)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            fail("rope_cos_sin must return (cos, sin)")
        expect_tensor(out[0], torch.tensor([[-0.9080]], device=dev), name="cos", atol=5e-3)
    with g.case("position-ids-left-padding"):
        mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]], device=dev)
        expect_tensor(g.call("position_ids_from_mask", mask),
                      torch.tensor([[1, 1, 0, 1, 2], [0, 1, 2, 3, 4]], device=dev), name="position_ids")
    with g.case("packed-positions"):
        expect_tensor(g.call("packed_positions", [5, 0, 17], [1, 3, 2], device=str(dev)),
                      torch.tensor([5, 0, 1, 2, 17, 18], device=dev), name="positions")
