"""Hidden grader for moe-sorted-layout.

1. ``moe_align_block_size`` on routing traces: uniform and Zipf-skewed routers (experts with no
   tokens, experts holding exactly a multiple of the block), 1 to 257 experts, block sizes 1 to 64,
   int32 and int64 ids, an empty batch. Graded as vLLM's own test does: expert_ids and the padded
   length exact; sorted ids compared as per-expert sets (any order inside an expert), every slot
   exactly once, sentinels only after an expert's real slots.
2. ``fused_moe`` over layouts whose entries are shuffled inside each expert segment (sentinels in
   the middle of blocks), with expert-parallel blocks marked -1, distinct weights per slot, in
   float64, float32 and bfloat16; the truth is the per-expert loop in float64.
3. ``padding_cost`` and ``loop_overheads`` (closed forms, rtol 1e-9) and ``slowdown_causes``.
"""

from __future__ import annotations

import random

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_close, expect_equal, expect_tensor, fail

TOL = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 2e-2}


def _trace(seed: int, T: int, K: int, E: int, alpha: float, distinct: bool, dtype) -> torch.Tensor:
    """Top-K routing of T tokens over E experts, expert popularity ~ rank^-alpha (shuffled)."""
    g = torch.Generator().manual_seed(seed)
    pop = torch.arange(1, E + 1, dtype=torch.float64) ** -alpha
    pop = pop[torch.randperm(E, generator=g)]
    if distinct:
        ids = torch.stack([torch.multinomial(pop, K, replacement=False, generator=g) for _ in range(T)]) \
            if T else torch.zeros(0, K, dtype=torch.int64)
    else:
        ids = torch.multinomial(pop, T * K, replacement=True, generator=g).view(T, K)
    return ids.to(dtype)


def check_layout(out, topk_ids: torch.Tensor, block_size: int, num_experts: int, ref) -> None:
    """Per-expert sets, as vLLM's test_moe_align_block_size does; never an order inside an expert."""
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        fail("moe_align_block_size must return (sorted_token_ids, expert_ids, num_tokens_post_padded)")
    s, e, n = out
    rs, re_, rn = ref.moe_align_block_size(topk_ids, block_size, num_experts)
    if isinstance(n, bool) or not isinstance(n, int):
        fail(f"num_tokens_post_padded: expected an int, got {type(n).__name__}")
    expect_equal(n, rn, name="num_tokens_post_padded")
    for name, t in (("sorted_token_ids", s), ("expert_ids", e)):
        if not isinstance(t, torch.Tensor) or t.dim() != 1 or t.dtype != torch.int32:
            fail(f"{name}: expected a 1-D int32 tensor")
        if t.device.type != topk_ids.device.type:
            fail(f"{name}: expected a tensor on {topk_ids.device.type}")
    expect_tensor(e, re_, name="expert_ids")
    if s.numel() != rn:
        fail(f"sorted_token_ids: expected exactly num_tokens_post_padded = {rn} entries, got {s.numel()}")
    flat = topk_ids.reshape(-1).to("cpu", torch.int64)
    numel = flat.numel()
    s = s.to("cpu", torch.int64)
    if s.numel() and (int(s.min()) < 0 or int(s.max()) > numel):
        fail("sorted_token_ids: an entry outside [0, T*K] (T*K is the only padding value)")
    valid = s < numel
    seen = torch.zeros(numel, dtype=torch.int64)
    seen.index_add_(0, s[valid], torch.ones(int(valid.sum()), dtype=torch.int64))
    if numel and (seen != 1).any():
        fail(f"sorted_token_ids: {int((seen != 1).sum())} slot(s) missing or repeated")
    blocks = e.to("cpu", torch.int64)
    owner = blocks.repeat_interleave(block_size)
    if (flat[s[valid]] != owner[valid]).any():
        fail("sorted_token_ids: a slot sits in a block of another expert")
    # inside one expert's run of blocks, the real slots come first and the sentinels last
    start = 0
    while start < len(blocks):
        end = start
        while end < len(blocks) and blocks[end] == blocks[start]:
            end += 1
        seg = valid[start * block_size:end * block_size]
        c = int(seg.sum())
        if not bool(seg[:c].all()):
            fail(f"sorted_token_ids: padding before the last real slot of expert {int(blocks[start])}")
        start = end


def _shuffled_layout(rng: random.Random, s: torch.Tensor, e: torch.Tensor, block_size: int) -> torch.Tensor:
    """Permute every expert's padded segment (real slots and sentinels together)."""
    s = s.clone()
    blocks = e.tolist()
    start = 0
    while start < len(blocks):
        end = start
        while end < len(blocks) and blocks[end] == blocks[start]:
            end += 1
        a, b = start * block_size, end * block_size
        perm = list(range(b - a))
        rng.shuffle(perm)
        s[a:b] = s[a:b][torch.tensor(perm, dtype=torch.int64)]
        start = end
    return s


def _loop_truth(x, w1, w2, topk_weights, topk_ids, local):
    """The per-expert loop in float64: gather, gate/up, SiLU-and-mul, down, weight, scatter-add."""
    x, w1, w2, tw = x.double(), w1.double(), w2.double(), topk_weights.double()
    inter = w1.shape[1] // 2
    out = torch.zeros_like(x)
    for ex in range(w1.shape[0]):
        if not local[ex]:
            continue
        rows, slot = (topk_ids == ex).nonzero(as_tuple=True)
        if len(rows) == 0:
            continue
        gu = x[rows] @ w1[ex].T
        h = (torch.nn.functional.silu(gu[:, :inter]) * gu[:, inter:]) @ w2[ex].T
        out.index_add_(0, rows, h * tw[rows, slot, None])
    return out


def _moe_inputs(seed, T, H, I, E, K, dtype, device):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, H, generator=g, dtype=torch.float64)
    w1 = torch.randn(E, 2 * I, H, generator=g, dtype=torch.float64) / H ** 0.5
    w2 = torch.randn(E, H, I, generator=g, dtype=torch.float64) / I ** 0.5
    logits = torch.randn(T, E, generator=g, dtype=torch.float64)
    tw, ti = torch.softmax(logits, -1).topk(K, -1)
    tw = tw * (1 + torch.rand(T, K, generator=g, dtype=torch.float64))   # distinct weight per slot
    return (x.to(dtype).to(device), w1.to(dtype).to(device), w2.to(dtype).to(device),
            tw.to(dtype).to(device), ti.to(device))


def _check_fused(g: Grading, ref, rng: random.Random, inputs, M: int, E: int, ep: bool) -> None:
    """fused_moe over ``inputs``' layout shuffled inside each expert (``ep``: a random half of the
    experts remote, their blocks -1) against the per-expert loop in float64."""
    x, w1, w2, tw, ti = inputs
    s, e, _ = ref.moe_align_block_size(ti, M, E)
    s = _shuffled_layout(rng, s, e, M)
    local = [True] * E
    if ep:
        local = [rng.random() < 0.5 for _ in range(E)]
        e = torch.tensor([ex if local[ex] else -1 for ex in e.tolist()], dtype=torch.int32, device=e.device)
    g.show_input(x=x, w1=w1, w2=w2, topk_weights=tw, topk_ids=ti, sorted_token_ids=s, expert_ids=e, block_size=M)
    out = g.call("fused_moe", x, w1, w2, tw, s, e, M)
    truth = _loop_truth(x, w1, w2, tw, ti, local)
    scale = float(truth.abs().max()) if truth.numel() else 0.0
    expect_tensor(out, truth, name="output", rtol=0.0, atol=TOL[x.dtype] * scale, dtype=x.dtype)


def _check_padding(g: Grading, ref, B: int, E: int, K: int, M: int) -> None:
    out = g.call("padding_cost", B, E, K, M)
    exp = ref.padding_cost(B, E, K, M)
    if not isinstance(out, dict) or set(out) != set(exp):
        fail(f"padding_cost must return a dict with exactly the keys {sorted(exp)}")
    for k in ("real_rows", "buffer_rows"):
        expect_equal(out[k], exp[k], name=f"[{k!r}]")
    for k in ("expected_padded_rows", "expected_overhead"):
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=1e-9)


def _check_loop(g: Grading, ref, args: tuple) -> None:
    out = g.call("loop_overheads", *args)
    exp = ref.loop_overheads(*args)
    if not isinstance(out, dict) or set(out) != set(exp):
        fail(f"loop_overheads must return a dict with exactly the keys {sorted(exp)}")
    for k in ("gather_bytes_per_layer", "scatter_add_bytes_per_layer"):
        expect_equal(out[k], exp[k], name=f"[{k!r}]")
    for k in ("active_experts", "launches_per_step", "rows_per_active_expert"):
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=1e-9)


def _ce_align(g: Grading, ref, trial: Trial) -> None:
    rng = trial.rng
    T, E, M = rng.randint(0, 2 * trial.size), rng.randint(1, 6), rng.randint(1, 4)
    K = rng.randint(1, E)
    ids = _trace(rng.randrange(1 << 62), T, K, E, rng.choice([0.0, 1.5]), rng.random() < 0.8,
                 rng.choice([torch.int32, torch.int64])).to(g.device)
    g.show_input(topk_ids=ids, block_size=M, num_experts=E)
    check_layout(g.call("moe_align_block_size", ids, M, E), ids, M, E, ref)


def _ce_fused(g: Grading, ref, trial: Trial) -> None:
    rng = trial.rng
    T, E, M = rng.randint(1, 2 * trial.size), rng.randint(1, 5), rng.randint(1, 4)
    K, dt = rng.randint(1, E), rng.choice([torch.float64, torch.float64, torch.float32, torch.bfloat16])
    inputs = _moe_inputs(rng.randrange(1 << 62), T, rng.randint(1, 4), rng.randint(1, 3), E, K, dt, g.device)
    _check_fused(g, ref, rng, inputs, M, E, E > 1 and rng.random() < 0.4)


def _ce_padding(g: Grading, ref, trial: Trial) -> None:
    rng = trial.rng
    E = rng.randint(1, 8)
    B, K, M = rng.randint(1, 4 * trial.size), rng.randint(1, E), rng.randint(1, 8)
    g.show_input(num_tokens=B, num_experts=E, top_k=K, block_size=M)
    _check_padding(g, ref, B, E, K, M)


def _ce_loop(g: Grading, ref, trial: Trial) -> None:
    rng = trial.rng
    E = rng.randint(1, 16)
    args = (rng.randint(1, 8 * trial.size), E, rng.randint(1, E), 64 * rng.randint(1, 16), rng.randint(1, 8),
            rng.randint(1, 4), rng.randint(1, 8))
    g.show_input(**dict(zip(("num_tokens", "num_experts", "top_k", "hidden", "num_moe_layers", "dtype_bytes",
                             "kernels_per_expert"), args)))
    _check_loop(g, ref, args)


_CE_KINDS = {"align-": _ce_align, "fused-": _ce_fused, "padding-": _ce_padding, "loop-": _ce_loop}


def counterexample(g: Grading, trial: Trial) -> bool | None:
    """A small fresh input of a failed case's kind: a routing trace over a few experts (skewed,
    with idle experts), a tiny fused forward over a shuffled layout (some experts remote), or
    small padding and loop configs. slowdown_causes takes no input: no small case shows it."""
    kind = trial.pick({prefix: prefix for prefix in _CE_KINDS})
    if kind is None:
        return False
    _CE_KINDS[kind](g, g.reference(), trial)
    return None


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"moe-sorted-layout:{g.salt}")
    dev = g.device

    # 1. the layout
    with g.case("align-vllm-example"):
        ids = torch.tensor([[0, 2], [2, 1], [0, 2]], dtype=torch.int32, device=dev)
        check_layout(g.call("moe_align_block_size", ids, 2, 3), ids, 2, 3, ref)
    with g.case("align-docstring-example-5-experts"):
        ids = torch.tensor([[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]], dtype=torch.int32, device=dev)
        check_layout(g.call("moe_align_block_size", ids, 4, 5), ids, 4, 5, ref)
    with g.case("align-multiple-of-block"):
        # expert 0: 4 slots, expert 1: 8, expert 3: 3 (expert 2 idle), block 4
        ids = torch.tensor([[0, 1], [1, 0], [1, 3], [0, 1], [1, 3], [0, 1], [1, 3], [1, 1]],
                           dtype=torch.int64, device=dev)
        check_layout(g.call("moe_align_block_size", ids, 4, 4), ids, 4, 4, ref)
    with g.case("align-one-expert"):
        ids = torch.zeros(3, 1, dtype=torch.int64, device=dev)
        check_layout(g.call("moe_align_block_size", ids, 2, 1), ids, 2, 1, ref)
    with g.case("align-empty-batch"):
        ids = torch.zeros(0, 4, dtype=torch.int32, device=dev)
        check_layout(g.call("moe_align_block_size", ids, 16, 8), ids, 16, 8, ref)
    configs = [  # T, K, E, block, zipf alpha, distinct, dtype
        (37, 4, 16, 8, 0.0, True, torch.int32), (1, 8, 256, 16, 0.0, True, torch.int32),
        (64, 8, 256, 64, 1.0, True, torch.int32), (200, 2, 8, 1, 0.0, True, torch.int64),
        (300, 6, 60, 16, 1.2, True, torch.int64), (512, 1, 257, 32, 0.8, True, torch.int32),
        (90, 3, 5, 7, 0.0, False, torch.int64), (128, 8, 128, 16, 2.0, True, torch.int32),
    ]
    for i, (T, K, E, M, alpha, distinct, dt) in enumerate(configs):
        with g.case(f"align-T{T}-K{K}-E{E}-M{M}-a{alpha}"):
            ids = _trace(100 + i, T, K, E, alpha, distinct, dt).to(dev)
            check_layout(g.call("moe_align_block_size", ids, M, E), ids, M, E, ref)

    # 2. the fused forward over the layout
    fwd = [  # T, H, I, E, K, block, dtype, expert-parallel
        (37, 32, 24, 16, 4, 8, torch.float64, False), (5, 16, 8, 6, 1, 4, torch.float64, False),
        (64, 48, 32, 32, 8, 16, torch.float32, False), (23, 32, 16, 8, 2, 4, torch.float64, True),
        (40, 64, 32, 12, 3, 8, torch.bfloat16, False), (1, 16, 16, 64, 6, 16, torch.float64, True),
        (200, 16, 8, 256, 8, 16, torch.float32, False), (9, 8, 4, 5, 2, 1, torch.float64, False),
    ]
    for i, (T, H, I, E, K, M, dt, ep) in enumerate(fwd):
        name = {torch.float64: "f64", torch.float32: "f32", torch.bfloat16: "bf16"}[dt]
        with g.case(f"fused-T{T}-E{E}-K{K}-M{M}-{name}{'-ep' if ep else ''}"):
            _check_fused(g, ref, rng, _moe_inputs(200 + i, T, H, I, E, K, dt, dev), M, E, ep)

    # 3. padding and the loop's costs
    pad = [(1, 256, 8, 16), (8, 256, 8, 16), (64, 256, 8, 64), (256, 256, 8, 128), (1024, 256, 8, 16),
           (4096, 256, 8, 128), (777, 60, 4, 16), (33, 9, 9, 5), (500, 64, 6, 1), (16384, 384, 8, 64),
           (5, 1, 1, 4), (40, 4, 2, 16)]
    for B, E, K, M in pad:
        with g.case(f"padding-B{B}-E{E}-k{K}-M{M}"):
            _check_padding(g, ref, B, E, K, M)
    loops = [(64, 256, 8, 7168, 58, 2, 6), (1, 256, 8, 7168, 58, 2, 6), (512, 128, 8, 4096, 48, 2, 5),
             (16, 8, 2, 4096, 32, 1, 4), (3, 60, 4, 2048, 24, 4, 7)]
    for args in loops:
        with g.case("loop-B{}-E{}-k{}-H{}-L{}-b{}-n{}".format(*args)):
            _check_loop(g, ref, args)
    with g.case("slowdown-causes"):
        out = g.call("slowdown_causes")
        if not isinstance(out, list) or not all(isinstance(c, str) for c in out):
            fail("slowdown_causes must return a list of strings")
        if any(c not in ref.CAUSES for c in out):
            fail("slowdown_causes: a string that is not one of the statement's causes")
        if out != sorted(out) or len(set(out)) != len(out):
            fail("slowdown_causes: the list must be sorted, without repeats")
        want = ref.slowdown_causes()
        if out != want:
            fail(f"slowdown_causes: {len(set(out) & set(want))} of your {len(out)} causes are right; "
                 f"the loop has {len(want)}")

    # input checks
    ids = torch.tensor([[0, 1], [1, 2]], dtype=torch.int32, device=dev)
    x, w1, w2, tw, ti = _moe_inputs(7, 4, 8, 4, 3, 2, torch.float64, dev)
    s, e, _ = ref.moe_align_block_size(ti, 4, 3)
    bad_s = s.clone()
    bad_s[0] = 4 * 2 + 1
    dup_s = s.clone()
    dup_s[1] = dup_s[0]
    bad_e = e.clone()
    bad_e[0] = 3
    s_wrap, e_wrap = s.to(torch.int64), e.to(torch.int64)    # int64 entries that wrap to valid int32 ones
    s_wrap[0] += 2 ** 32
    e_wrap[0] += 2 ** 32
    neg_s = s.clone()
    neg_s[0] = -1
    e_m2 = e.clone()
    e_m2[0] = -2
    w1_odd = torch.cat([w1, w1[:, :1]], 1)
    checks = [
        ("align-id-too-large", "moe_align_block_size", (ids, 4, 2)),
        ("align-negative-id", "moe_align_block_size", (ids - 1, 4, 3)),
        ("align-block-zero", "moe_align_block_size", (ids, 0, 3)),
        ("align-1d-ids", "moe_align_block_size", (ids.reshape(-1), 4, 3)),
        ("align-float-ids", "moe_align_block_size", (ids.double(), 4, 3)),
        ("align-no-experts", "moe_align_block_size", (ids[:0], 4, 0)),
        ("fused-id-past-sentinel", "fused_moe", (x, w1, w2, tw, bad_s, e, 4)),
        ("fused-slot-twice", "fused_moe", (x, w1, w2, tw, dup_s, e, 4)),
        ("fused-expert-out-of-range", "fused_moe", (x, w1, w2, tw, s, bad_e, 4)),
        ("fused-length-not-blocks", "fused_moe", (x, w1, w2, tw, s[:-1], e, 4)),
        ("fused-w2-shape", "fused_moe", (x, w1, w2.transpose(1, 2), tw, s, e, 4)),
        ("fused-ids-as-list", "fused_moe", (x, w1, w2, tw, s.tolist(), e, 4)),
        ("fused-1d-topk-weights", "fused_moe", (x, w1, w2, tw[:, 0], s, e, 4)),
        ("fused-odd-w1-rows", "fused_moe", (x, w1_odd, w2, tw, s, e, 4)),
        ("fused-block-zero-empty-layout", "fused_moe", (x, w1, w2, tw, s[:0], e[:0], 0)),
        ("fused-negative-id", "fused_moe", (x, w1, w2, tw, neg_s, e, 4)),
        ("fused-expert-minus-two", "fused_moe", (x, w1, w2, tw, s, e_m2, 4)),
        ("fused-int64-id-past-int32", "fused_moe", (x, w1, w2, tw, s_wrap, e, 4)),
        ("fused-int64-expert-past-int32", "fused_moe", (x, w1, w2, tw, s, e_wrap, 4)),
        ("padding-topk-above-experts", "padding_cost", (10, 4, 5, 16)),
        ("padding-block-zero", "padding_cost", (10, 8, 2, 0)),
        ("padding-no-tokens", "padding_cost", (0, 8, 2, 16)),
        ("padding-float-block", "padding_cost", (10, 8, 2, 4.0)),
        ("loop-topk-above-experts", "loop_overheads", (10, 4, 5, 1024, 4, 2, 6)),
        ("loop-topk-zero", "loop_overheads", (10, 8, 0, 1024, 4, 2, 6)),
        ("loop-hidden-zero", "loop_overheads", (10, 8, 2, 0, 4, 2, 6)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
