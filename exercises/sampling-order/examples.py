"""Public cases for sampling-order (`inferprep grade sampling-order FILE --public`)."""

import torch

from inferprep.grading import Grading, expect_tensor, fail

LLAMA_CPP = ("top_k", "top_p", "min_p", "temperature")   # temperature last


def grade(g: Grading) -> None:
    dev = g.device

    def probs(logits, expected, **knobs):
        knobs = {k: v.to(dev) if isinstance(v, torch.Tensor) else v for k, v in knobs.items()}
        out = g.call("sampling_probs", torch.tensor(logits, device=dev), **knobs)
        expect_tensor(out, torch.tensor(expected, device=dev), rtol=2e-6, atol=1e-12)

    with g.case("statement-example-temperature-first"):
        probs([[3.0, 2.0, 1.0]], [[1.0, 0.0, 0.0]], temperature=0.5, top_k=0, top_p=0.8)
    with g.case("statement-example-temperature-last"):
        probs([[3.0, 2.0, 1.0]], [[0.8807970881462097, 0.11920291930437088, 0.0]],
              temperature=0.5, top_k=0, top_p=0.8, order=LLAMA_CPP)
    with g.case("top-k-keeps-ties"):
        probs([[2.0, 1.0, 1.0, 0.0]], [[0.5761168599128723, 0.21194155514240265, 0.21194155514240265, 0.0]],
              temperature=1.0, top_k=2, top_p=1.0)
    with g.case("greedy-row-next-to-a-sampled-row"):
        probs([[1.0, 3.0, 2.0], [1.0, 3.0, 2.0]],
              [[0.0, 1.0, 0.0], [0.04427826777100563, 0.7709603309631348, 0.1847614347934723]],
              temperature=torch.tensor([0.0, 0.7]), top_k=0, top_p=1.0)
    with g.case("greedy-tie-takes-the-lowest-index"):
        probs([[2.0, 2.0, 1.0]], [[1.0, 0.0, 0.0]], temperature=0.0, top_k=0, top_p=1.0)
    with g.case("tiny-top-p-is-argmax"):
        probs([[2.0, 1.0, 0.0, -1.0]], [[1.0, 0.0, 0.0, 0.0]], temperature=0.8, top_k=0, top_p=1e-8)
    with g.case("rejects-top-p-zero"):
        g.raises("ValueError", "sampling_probs", torch.tensor([[1.0, 2.0]], device=dev), 1.0, 0, 0.0)
    with g.case("sample-respects-greedy-rows-and-top-k"):
        n = 4000
        x = torch.tensor([[1.0, 3.0, 2.0, 0.0]], device=dev).repeat(n, 1)
        t = torch.tensor([0.0, 1.0], device=dev).repeat(n // 2)
        ids = g.call("sample", x, t, 2, 1.0)
        if not isinstance(ids, torch.Tensor) or tuple(ids.shape) != (n,) or ids.dtype != torch.int64:
            fail(f"sample must return a ({n},) int64 tensor")
        if ids.device.type != dev.type:
            fail(f"sample must return a tensor on {dev.type}")
        ids = ids.cpu()
        if (ids[0::2] != 1).any():
            fail("a greedy row (temperature 0) did not return its argmax, token 1")
        sampled = ids[1::2]
        if ((sampled != 1) & (sampled != 2)).any():
            fail("a row with top_k=2 returned a token outside {1, 2}")
        share = float((sampled == 2).double().mean())   # expected 0.2689 (exp(2) / (exp(3) + exp(2)))
        if abs(share - 0.2689414) > 0.06:
            fail(f"token 2 was drawn in {share:.3f} of the sampled rows; expected about 0.269")
