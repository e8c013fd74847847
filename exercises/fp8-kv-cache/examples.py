"""Public cases for fp8-kv-cache (literal expected values)."""

import torch

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, expect_tensor


class DemoStream:
    """A 10,000-token stream, one KV head of width 4: Gaussian keys and values, and one value
    token (position 6000) 30 times larger than the rest."""

    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.k = torch.randn(10_000, 1, 4, generator=g)
        self.v = torch.randn(10_000, 1, 4, generator=g)
        self.v[6000] *= 30.0
        self.length, self.num_kv_heads, self.head_dim = 10_000, 1, 4

    def read(self, start, end):
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= self.length):
            raise IndexError(f"read({start}, {end}) out of range")
        if end - start > 4096:
            raise ValueError("at most 4096 tokens per read")
        return self.k[start:end].clone(), self.v[start:end].clone()


def grade(g: Grading) -> None:
    dev = g.device
    x = torch.tensor([1.0625, 17.0, 500.0, 2.0 ** -10, -3.0, 3 * 2.0 ** -10], device=dev)
    with g.case("encode-scale-1"):
        out = g.call("fp8_encode", x, 1.0, "e4m3")
        expect_tensor(out, torch.tensor([0x38, 0x58, 0x7E, 0x00, 0xC4, 0x02], dtype=torch.uint8, device=dev),
                      name="codes")
    with g.case("encode-scale-0.25"):
        out = g.call("fp8_encode", x, 0.25, "e4m3")
        expect_tensor(out, torch.tensor([0x48, 0x68, 0x7E, 0x02, 0xD4, 0x06], dtype=torch.uint8, device=dev),
                      name="codes")
    with g.case("encode-e5m2-saturates"):
        out = g.call("fp8_encode", torch.tensor([60000.0, 1.125, -1e9], device=dev), 1.0, "e5m2")
        expect_tensor(out, torch.tensor([0x7B, 0x3C, 0xFB], dtype=torch.uint8, device=dev), name="codes")
    with g.case("decode-scale-0.25"):
        c = torch.tensor([0x48, 0x68, 0x7E, 0x02, 0xD4, 0x06], dtype=torch.uint8, device=dev)
        out = g.call("fp8_decode", c, 0.25, "e4m3")
        expect_tensor(out, torch.tensor([1.0, 16.0, 112.0, 0.0009765625, -3.0, 0.0029296875], device=dev),
                      name="values")
    with g.case("decode-attention-gqa-2-over-1"):
        q = torch.tensor([[[1.0, 0.0, 2.0, -1.0], [0.5, 0.5, 0.5, 0.5]]], device=dev)
        kc = torch.tensor([[[[80, 88, 0, 80], [0, 208, 92, 72], [88, 0, 80, 208]]]], dtype=torch.uint8, device=dev)
        vc = torch.tensor([[[[88, 0, 216, 96], [80, 92, 0, 224], [100, 88, 88, 88]]]], dtype=torch.uint8, device=dev)
        out = g.call("fp8_decode_attention", q, kc, vc, 0.125, 0.0625, "e4m3")
        want = torch.tensor([[[1.5739324, 1.2366449, 0.3879426, -0.5933286],
                              [1.3790257, 0.7138593, -0.1715345, 0.5370744]]], device=dev)
        expect_tensor(out, want, name="out", rtol=1e-4, atol=1e-5)
    with g.case("audit-demo-stream"):
        out = g.call("audit_long_context", g.host(DemoStream(), ["read"], {
            "length": 10_000, "num_kv_heads": 1, "head_dim": 4}), 0, 2048, 200.0, 100.0)
        expect_close(out["k_scale"], 0.020507466793060303, name="k_scale", rtol=1e-6)
        expect_close(out["v_scale"], 0.035799968242645266, name="v_scale", rtol=1e-6)
        expect_equal(out["k_first_clipped"], None, name="k_first_clipped")
        expect_equal(out["v_first_clipped"], 6000, name="v_first_clipped")
        expect_equal(out["k_clipped_tokens"], 0, name="k_clipped_tokens")
        expect_equal(out["v_clipped_tokens"], 1, name="v_clipped_tokens")
    with g.case("rejects-nan", group=INPUT_CHECKS):
        g.raises("ValueError", "fp8_encode", torch.tensor([1.0, float("nan")], device=dev), 1.0, "e4m3")
