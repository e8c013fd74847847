"""Public examples for flash-attention-forward (run them with `inferprep grade --public`)."""

import torch

from inferprep.grading import Grading, expect_equal, expect_tensor, fail


class HBM:
    """A small version of the grader's HBM model: counts the elements moved."""

    def __init__(self, q, k, v, block_q, block_k):
        self.q, self.k, self.v, self.bq, self.bk = q, k, v, block_q, block_k
        self.n = q.shape[0]
        self.reads = self.writes = 0
        self.o = torch.full_like(q, float("nan"))
        self.lse = torch.full((self.n,), float("nan"), device=q.device)

    def _load(self, t, idx, b):
        if not 0 <= idx < -(-self.n // b):
            raise IndexError(f"tile {idx} out of range")
        tile = t[idx * b:(idx + 1) * b]
        self.reads += tile.numel()
        return tile.clone()

    def load_q(self, i):
        return self._load(self.q, i, self.bq)

    def load_k(self, j):
        return self._load(self.k, j, self.bk)

    def load_v(self, j):
        return self._load(self.v, j, self.bk)

    def store_o(self, i, tile):
        self.o[i * self.bq:(i + 1) * self.bq] = tile
        self.writes += tile.numel()

    def store_lse(self, i, tile):
        self.lse[i * self.bq:(i + 1) * self.bq] = tile
        self.writes += tile.numel()


def pair(out):
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        fail("flash_attention_forward must return (out, lse)")
    return out


def grade(g: Grading) -> None:
    dev = g.device
    with g.case("scores-1-2-3-4-blocks-of-2"):
        q = torch.ones(1, 1, 4, 1, device=dev)
        kv = torch.tensor([1.0, 2.0, 3.0, 4.0], device=dev).view(1, 1, 4, 1)
        o, lse = pair(g.call("flash_attention_forward", q, kv, kv, causal=False, block_q=2, block_k=2, scale=1.0))
        expect_tensor(o, torch.full((1, 1, 4, 1), 3.4927, device=dev), name="out", atol=1e-4)
        expect_tensor(lse, torch.full((1, 1, 4), 4.4402, device=dev), name="lse", atol=1e-4)
    with g.case("scores-minus-1000"):
        q = torch.full((1, 1, 2, 1), -1000.0, device=dev)
        k = torch.ones(1, 1, 2, 1, device=dev)
        v = torch.tensor([1.0, 2.0], device=dev).view(1, 1, 2, 1)
        o, lse = pair(g.call("flash_attention_forward", q, k, v, block_q=1, block_k=1, scale=1.0))
        expect_tensor(o, torch.full((1, 1, 2, 1), 1.5, device=dev), name="out", atol=1e-5)
        expect_tensor(lse, torch.full((1, 1, 2), -999.3069, device=dev), name="lse", atol=1e-3)
    with g.case("causal-uniform-N3-block-2"):
        q = torch.zeros(1, 1, 3, 1, device=dev)
        v = torch.tensor([1.0, 2.0, 3.0], device=dev).view(1, 1, 3, 1)
        o, lse = pair(g.call("flash_attention_forward", q, q, v, causal=True, block_q=2, block_k=2))
        expect_tensor(o, torch.tensor([1.0, 1.5, 2.0], device=dev).view(1, 1, 3, 1), name="out", atol=1e-5)
        expect_tensor(lse, torch.tensor([0.0, 0.693147, 1.098612], device=dev).view(1, 1, 3), name="lse", atol=1e-5)
    with g.case("tiles-N5-blocks-of-2-causal"):
        q = torch.zeros(5, 2, device=dev)
        v = torch.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [4.0, 0.0], [5.0, 1.0]], device=dev)
        hbm = HBM(q, q, v, 2, 2)
        handle = g.host(hbm, ["load_q", "load_k", "load_v", "store_o", "store_lse"],
                        {"seq_len": 5, "head_dim": 2, "block_q": 2, "block_k": 2, "scale": 0.7071067811865476})
        g.call("flash_attention_tiles", handle, causal=True)
        want = torch.tensor([[1.0, 0.0], [1.5, 0.0], [2.0, 0.0], [2.5, 0.0], [3.0, 0.2]], device=dev)
        expect_tensor(hbm.o, want, name="stored O", atol=1e-5)
        expect_equal(hbm.reads, 54, name="elements read")   # 5*2 + 2*2*(2 + 4 + 5)
        expect_equal(hbm.writes, 15, name="elements written")
    with g.case("hbm-traffic-N4096-d64-blocks-128"):
        got = g.call("hbm_traffic", 4096, 64, 128, 128, causal=False)
        if not isinstance(got, dict):
            fail("hbm_traffic must return a dict")
        want = {"flash_reads": 17039360, "flash_writes": 266240, "naive_reads": 34340864, "naive_writes": 33816576}
        expect_equal(sorted(got), sorted(want), name="keys")
        for key, value in want.items():
            expect_equal(got[key], value, name=key)
