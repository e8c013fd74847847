"""Hidden grader of context-parallel-ring.

Core cases, in order:

- Shard positions for both schemes (zigzag pinned: rank r holds chunks r and 2p-1-r of 2p).
- Ring attention run SPMD (``g.call_spmd``), one hosted ``RankComm`` per rank over one
  ``inferprep.sim.ring.RingNetwork`` per case: every rank's output against float64 full causal
  attention of the same (rounded) inputs, then every message the ring carried: exactly p - 1
  steps, step s of rank r = the K/V block of rank (r - s) mod p as ``cat(k.flatten(), v.flatten())``
  in the input dtype (so the bytes per rank are (p-1) * 2 * H_kv * (N/p) * d * bytes). A barrier
  timeout is a deadlock; later SPMD cases are then not run.
- Ranks run alone (``SoloRank``), last rank first (every rank then needs a block of a rank not
  yet run), the grader playing the partners: ranks of one process cannot pool their Q/K/V through
  module state and pass.
- Work per rank and step (exact ints), traffic and overlap threshold (relative 1e-12), against
  the reference on tabled and made-up models and GPUs.

Input checks last.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, SubmissionRaised, expect_close, expect_equal, expect_tensor, fail
from inferprep.sim.ring import RingNetwork, SoloRank
from inferprep.specs import DType, ModelConfig

TIMEOUT_S = 3.0
TOL = {torch.float64: (1e-9, 1e-10), torch.float32: (1e-4, 2e-5), torch.bfloat16: (2e-2, 3e-2),
       torch.float16: (5e-3, 5e-3)}
MHA = ModelConfig(name="mha-made-up", n_layers=40, hidden_size=5120, n_heads=40, n_kv_heads=40, head_dim=128,
                  ffn_size=13824, vocab_size=32000)
WIDE = ModelConfig(name="gqa-wide-heads", n_layers=46, hidden_size=4608, n_heads=32, n_kv_heads=16, head_dim=128,
                   ffn_size=36864, vocab_size=256000)
MQA = ModelConfig(name="mqa-made-up", n_layers=30, hidden_size=6144, n_heads=48, n_kv_heads=1, head_dim=256,
                  ffn_size=24576, vocab_size=50000)
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", bf16_dense_flops=1.3e15, fp8_dense_flops=2.6e15,
                              nvlink_bytes_per_s=1.2e12, nic_bytes_per_s=25e9)
THIRD_GPU = dataclasses.replace(ODD_GPU, name="made-up-third", nvlink_bytes_per_s=1e11 / 3)  # half of it is no int


class _State:
    deadlocked_in: str | None = None


def _dt(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _positions(N: int, p: int, r: int, scheme: str) -> torch.Tensor:
    if scheme == "contiguous":
        n = N // p
        return torch.arange(r * n, (r + 1) * n)
    c = N // (2 * p)
    return torch.cat([torch.arange(r * c, (r + 1) * c), torch.arange((2 * p - 1 - r) * c, (2 * p - r) * c)])


def _full_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    q, k, v = Q.double(), K.double(), V.double()
    grp = q.shape[0] // k.shape[0]
    k, v = k.repeat_interleave(grp, 0), v.repeat_interleave(grp, 0)
    N, d = q.shape[1], q.shape[2]
    s = (q @ k.transpose(1, 2)) / math.sqrt(d)
    s = s.masked_fill(torch.triu(torch.ones(N, N, dtype=torch.bool), 1), float("-inf"))
    return torch.softmax(s, -1) @ v


def _inputs(g: Grading, seed: int, N: int, hq: int, hkv: int, d: int, dtype: torch.dtype):
    gen = g.rng(seed)
    Q = (1.5 * torch.randn(hq, N, d, generator=gen, dtype=torch.float64)).to(dtype)
    K = torch.randn(hkv, N, d, generator=gen, dtype=torch.float64).to(dtype)
    V = torch.randn(hkv, N, d, generator=gen, dtype=torch.float64).to(dtype)
    return Q, K, V


def _message(K: torch.Tensor, V: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    return torch.cat([K[:, pos].reshape(-1), V[:, pos].reshape(-1)])


def _expect_out(got, want: torch.Tensor, dtype: torch.dtype, device, where: str) -> None:
    rtol, atol = TOL[dtype]
    expect_tensor(got, want.to(device), rtol=rtol, atol=atol, dtype=dtype, name=where)


def _check_msgs(problems: list[str]) -> None:
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        fail("; ".join(problems[:3]) + more)


def _spmd_case(g: Grading, state: _State, case: str, seed: int, p: int, N: int, hq: int, hkv: int, d: int,
               dtype: torch.dtype, scheme: str) -> None:
    if state.deadlocked_in is not None:
        fail(f"not run: the submission deadlocked in case {state.deadlocked_in!r}")
    Q, K, V = _inputs(g, seed, N, hq, hkv, d, dtype)
    want = _full_attention(Q, K, V)
    pos = [_positions(N, p, r, scheme) for r in range(p)]
    net = RingNetwork(p, timeout_s=TIMEOUT_S)
    comms = [g.host(net.comm(r), ["send_recv"], {"rank": r, "world_size": p}, concurrent=True) for r in range(p)]
    dev = g.device
    calls = [((Q[:, pos[r]].to(dev), K[:, pos[r]].to(dev), V[:, pos[r]].to(dev), comms[r], N, scheme), {})
             for r in range(p)]
    try:
        out = g.call_spmd("ring_attention", calls)
    except SubmissionRaised as e:
        others = [x for x in (e.per_rank or []) if x is not None and not x.is_a("TimeoutError")]
        if others:
            raise others[0] from None
        if net.deadlock is not None:
            state.deadlocked_in = case
            fail(net.deadlock.describe())
        raise
    if net.deadlock is not None:
        state.deadlocked_in = case
        fail(net.deadlock.describe())
    for r in range(p):
        _expect_out(out[r], want[:, pos[r]], dtype, dev, f"rank {r}")
    expected = [[_message(K, V, pos[(r - s) % p]) for s in range(p - 1)] for r in range(p)]
    _check_msgs(net.check_messages(expected))


def _solo_case(g: Grading, seed: int, p: int, N: int, hq: int, hkv: int, d: int,
               dtype: torch.dtype, scheme: str) -> None:
    Q, K, V = _inputs(g, seed, N, hq, hkv, d, dtype)
    want = _full_attention(Q, K, V)
    pos = [_positions(N, p, r, scheme) for r in range(p)]
    # fixed order, last rank first: with either scheme rank r > 0 needs the blocks of ranks 0..r-1,
    # none of which has run yet, so ranks that pool their inputs across calls cannot pass any rank
    # (ascending order would let contiguous rank 0, which needs only its own block, seed the pool)
    for r in reversed(range(p)):
        sent = [_message(K, V, pos[(r - s) % p]) for s in range(p - 1)]
        incoming = [_message(K, V, pos[(r - 1 - s) % p]) for s in range(p - 1)]
        solo = SoloRank(p, r, incoming)
        comm = g.host(solo, ["send_recv"], {"rank": r, "world_size": p})
        dev = g.device
        try:
            out = g.call("ring_attention", Q[:, pos[r]].to(dev), K[:, pos[r]].to(dev), V[:, pos[r]].to(dev),
                         comm, N, scheme)
        except SubmissionRaised:
            if solo.extra_steps:
                fail(f"rank {r}, run alone: called send_recv {len(solo.messages)} times; the ring has {p - 1} step(s)")
            raise
        if solo.extra_steps:
            fail(f"rank {r}, run alone: called send_recv {len(solo.messages)} times; the ring has {p - 1} step(s)")
        where = f"rank {r} (run alone, its partners played by the grader)"
        _expect_out(out, want[:, pos[r]], dtype, dev, where)
        problems = solo.check_messages(sent)
        if problems:
            fail(f"{where}: " + "; ".join(problems[:3]))


def _shard_cases(g: Grading) -> None:
    for p, N, scheme in ((4, 64, "zigzag"), (4, 64, "contiguous"), (3, 18, "zigzag"), (8, 16, "zigzag"),
                         (1, 10, "zigzag"), (5, 15, "contiguous"), (1, 1, "contiguous")):
        with g.case(f"shard positions: N={N}, p={p}, {scheme}"):
            for r in range(p):
                got = g.call("shard_positions", N, p, r, scheme)
                expect_tensor(got, _positions(N, p, r, scheme).to(torch.int64), name=f"rank {r}", check_device=False)


def _ring_cases(g: Grading, state: _State) -> None:
    f64, f32, bf16 = torch.float64, torch.float32, torch.bfloat16
    cases = [  # p, N, H_q, H_kv, d, dtype, scheme
        (4, 64, 2, 2, 16, f64, "zigzag"), (4, 64, 2, 2, 16, f64, "contiguous"), (2, 32, 4, 1, 8, f64, "zigzag"),
        (3, 48, 4, 2, 8, f32, "zigzag"), (8, 128, 2, 1, 8, f64, "zigzag"), (5, 40, 3, 3, 8, bf16, "contiguous"),
        (1, 16, 2, 1, 8, f64, "zigzag"), (6, 72, 6, 3, 4, f32, "contiguous"), (4, 256, 8, 2, 32, bf16, "zigzag"),
        (3, 6, 2, 2, 4, f64, "zigzag"), (2, 64, 4, 2, 16, torch.float16, "zigzag"),
        # one token per rank and head_dim 1: a rank's own block starts at its only query
        (3, 3, 2, 1, 1, f64, "contiguous")]
    for k, (p, N, hq, hkv, d, dt, scheme) in enumerate(cases):
        case = f"ring attention p={p} N={N} H_q={hq} H_kv={hkv} d={d} {_dt(dt)} {scheme}"
        with g.case(case):
            _spmd_case(g, state, case, 100 + k, p, N, hq, hkv, d, dt, scheme)
    for k, (p, N, hq, hkv, d, dt, scheme) in enumerate([(4, 64, 4, 2, 8, f64, "zigzag"),
                                                         (3, 36, 2, 1, 8, f32, "contiguous")]):
        with g.case(f"ring attention p={p} N={N} {_dt(dt)} {scheme}, each rank alone"):
            _solo_case(g, 200 + k, p, N, hq, hkv, d, dt, scheme)


def _work_cases(g: Grading, ref) -> None:
    for N, p, scheme in ((64, 4, "contiguous"), (64, 4, "zigzag"), (128, 8, "contiguous"), (128, 8, "zigzag"),
                         (36, 3, "zigzag"), (50, 5, "contiguous"), (7, 1, "contiguous"), (24, 6, "zigzag"),
                         # runs of one token: a tile whose only key equals its only query is visible
                         (6, 3, "zigzag"), (4, 2, "zigzag"), (5, 5, "contiguous")):
        with g.case(f"work per rank and step: N={N}, p={p}, {scheme}"):
            out = g.call("causal_work", N, p, scheme)
            want = ref.causal_work(N, p, scheme)
            if not isinstance(out, dict) or set(out) != set(want):
                fail(f"expected a dict with exactly the keys {sorted(want)}")
            expect_equal(out["work"], want["work"], name="['work']")
            expect_equal(out["per_rank"], want["per_rank"], name="['per_rank']")
            expect_equal(out["makespan"], want["makespan"], name="['makespan']")
            expect_close(out["efficiency"], want["efficiency"], rtol=1e-12, name="['efficiency']")


def _calc_cases(g: Grading, ref) -> None:
    L70, L8 = specs.LLAMA_3_1_70B, specs.LLAMA_3_1_8B
    for model, n, p, dt in ((L70, 131072, 8, DType.BF16), (L70, 1 << 20, 16, DType.BF16), (L8, 32768, 4, DType.FP8),
                            (MHA, 65536, 8, DType.BF16), (MQA, 12288, 3, DType.FP32), (WIDE, 100_000, 5, DType.FP16),
                            (L8, 4096, 2, DType.BF16)):
        with g.case(f"traffic: {model.name}, N={n}, p={p}, {dt.value}"):
            out = g.call("cp_traffic", model, n, p, dt)
            want = ref.cp_traffic(model, n, p, dt)
            if not isinstance(out, dict) or set(out) != set(want):
                fail(f"expected a dict with exactly the keys {sorted(want)}")
            for key in want:
                expect_close(out[key], want[key], rtol=1e-12, name=f"[{key!r}]")
    combos = [(L70, specs.H100_SXM, DType.BF16, "nvlink", 1.0, "contiguous"),
              (L70, specs.H100_SXM, DType.BF16, "nic", 1.0, "zigzag"),
              (L70, specs.H100_SXM, DType.BF16, "nvlink", 0.5, "zigzag"),
              (L8, specs.H200_SXM, DType.FP8, "nic", 0.6, "contiguous"),
              (MHA, specs.A100_SXM_80GB, DType.BF16, "nic", 0.75, "zigzag"),
              (MQA, specs.B200, DType.FP16, "nvlink", 0.4, "zigzag"),
              (WIDE, ODD_GPU, DType.FP8, "nvlink", 1.0, "contiguous"),
              (WIDE, ODD_GPU, DType.BF16, "nic", 0.3, "zigzag"),
              (L8, THIRD_GPU, DType.BF16, "nvlink", 1.0, "contiguous")]
    for model, gpu, dt, link, eff, scheme in combos:
        with g.case(f"overlap threshold: {model.name}, {gpu.name}, {dt.value}, {link}, {eff:g}, {scheme}"):
            out = g.call("overlap_threshold", model, gpu, dt, link, eff, scheme)
            expect_close(out, ref.overlap_threshold(model, gpu, dt, link, eff, scheme), rtol=1e-12,
                         name="tokens per rank")


def _spmd_input_check(g: Grading, state: _State, case: str, p: int, per_rank) -> None:
    with g.case(case, group=INPUT_CHECKS):
        if state.deadlocked_in is not None:
            fail(f"not run: the submission deadlocked in case {state.deadlocked_in!r}")
        net = RingNetwork(p, timeout_s=TIMEOUT_S)
        comms = [g.host(net.comm(r), ["send_recv"], {"rank": r, "world_size": p}, concurrent=True) for r in range(p)]
        try:
            g.call_spmd("ring_attention", [((*a[:3], comms[r], *a[3:]), {}) for r, a in enumerate(per_rank)])
        except SubmissionRaised as e:
            wrong = [r for r, x in enumerate(e.per_rank or [None] * p) if x is None or not x.is_a("ValueError")]
            if wrong:
                fail(f"rank(s) {wrong} did not raise ValueError")
        else:
            fail("expected ValueError on every rank, but the call returned")
        if any(net.steps(r) for r in range(p)):
            fail("a rank communicated before checking its arguments")


def _input_checks(g: Grading, state: _State) -> None:
    dev = g.device
    z = lambda *s, dt=torch.float64: torch.zeros(*s, dtype=dt, device=dev)  # noqa: E731
    p = 2
    _spmd_input_check(g, state, "ring attention: zigzag with N not a multiple of 2p", p,
                      [(z(2, 3, 4), z(2, 3, 4), z(2, 3, 4), 6, "zigzag")] * p)
    _spmd_input_check(g, state, "ring attention: q holds a different number of tokens than N / p", p,
                      [(z(2, 4, 4), z(2, 4, 4), z(2, 4, 4), 16, "zigzag")] * p)
    _spmd_input_check(g, state, "ring attention: query heads not a multiple of KV heads", p,
                      [(z(3, 4, 4), z(2, 4, 4), z(2, 4, 4), 8, "zigzag")] * p)
    _spmd_input_check(g, state, "ring attention: k and v of different shapes", p,
                      [(z(2, 4, 4), z(2, 4, 4), z(1, 4, 4), 8, "zigzag")] * p)
    _spmd_input_check(g, state, "ring attention: an unknown scheme", p,
                      [(z(2, 4, 4), z(2, 4, 4), z(2, 4, 4), 8, "striped")] * p)
    _spmd_input_check(g, state, "ring attention: q of 2 dimensions", p,
                      [(z(4, 4), z(4, 4), z(4, 4), 8, "contiguous")] * p)
    _spmd_input_check(g, state, "ring attention: mixed dtypes", p,
                      [(z(2, 4, 4), z(2, 4, 4, dt=torch.float32), z(2, 4, 4, dt=torch.float32), 8, "zigzag")] * p)
    _spmd_input_check(g, state, "ring attention: v of another dtype than q and k", p,
                      [(z(2, 4, 4), z(2, 4, 4), z(2, 4, 4, dt=torch.float32), 8, "zigzag")] * p)
    _spmd_input_check(g, state, "ring attention: head_dim 0", p,
                      [(z(2, 4, 0), z(2, 4, 0), z(2, 4, 0), 8, "zigzag")] * p)
    _spmd_input_check(g, state, "ring attention: integer q, k and v", p,
                      [(z(2, 4, 4, dt=torch.int64), z(2, 4, 4, dt=torch.int64), z(2, 4, 4, dt=torch.int64), 8,
                        "zigzag")] * p)
    bad = [("shard positions: zigzag with N not a multiple of 2p", "shard_positions", (12, 4, 0, "zigzag")),
           ("shard positions: n_total = 16.0 (a float)", "shard_positions", (16.0, 4, 0, "zigzag")),
           ("shard positions: n_total = 0", "shard_positions", (0, 2, 0, "zigzag")),
           ("shard positions: p = 0", "shard_positions", (8, 0, 0, "contiguous")),
           ("shard positions: rank >= p", "shard_positions", (16, 4, 4, "zigzag")),
           ("shard positions: an unknown scheme", "shard_positions", (16, 4, 0, "striped")),
           ("work: contiguous with N not a multiple of p", "causal_work", (10, 4, "contiguous")),
           ("traffic: N not a multiple of p", "cp_traffic", (specs.LLAMA_3_1_8B, 1000, 3, DType.BF16)),
           ("traffic: p = 1 has no ring", "cp_traffic", (specs.LLAMA_3_1_8B, 1024, 1, DType.BF16)),
           ("traffic: an MLA model", "cp_traffic", (specs.DEEPSEEK_V3, 1024, 8, DType.BF16)),
           ("traffic: an MLA model with a 1-wide latent", "cp_traffic",
            (dataclasses.replace(specs.DEEPSEEK_V3, kv_lora_rank=1), 1024, 8, DType.BF16)),
           ("traffic: n_heads not a multiple of n_kv_heads", "cp_traffic",
            (dataclasses.replace(specs.LLAMA_3_1_8B, n_heads=30), 1024, 8, DType.BF16)),
           ("traffic: n_tokens = 0", "cp_traffic", (specs.LLAMA_3_1_8B, 0, 8, DType.BF16)),
           ("overlap: an unknown link", "overlap_threshold", (specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16, "pcie", 1.0, "zigzag")),
           ("overlap: an unknown scheme", "overlap_threshold", (specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16, "nic", 1.0, "striped")),
           ("overlap: efficiency 0", "overlap_threshold", (specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16, "nic", 0.0, "zigzag")),
           ("overlap: efficiency above 1", "overlap_threshold", (specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16, "nic", 1.5, "zigzag")),
           ("overlap: FP8 on an A100", "overlap_threshold", (specs.LLAMA_3_1_8B, specs.A100_SXM_80GB, DType.FP8, "nic", 1.0, "zigzag"))]
    for case, fn, args in bad:
        with g.case(case, group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)


def grade(g: Grading) -> None:
    ref = g.reference()
    state = _State()
    _shard_cases(g)
    _ring_cases(g, state)
    _work_cases(g, ref)
    _calc_cases(g, ref)
    _input_checks(g, state)
