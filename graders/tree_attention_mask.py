"""Hidden cases for tree-attention-mask: masks and positions of fixed, Medusa-built and random
trees (chains, stars, root only, prefixes 0..600); greedy acceptance on trees with duplicate
sibling tokens (longer path through the later sibling, depth ties, mismatches below a match);
tree-vs-chain costs on tabled and made-up step models, tuple inputs, rank probabilities whose
first entry is not the largest, and an FP8 KV cache under BF16 weights at long context; crossover
batches with an exact tie, the max_batch edge, a rank 2 likelier than rank 1 and FP8 KV caches
at c >= 4096; then the input checks."""

from __future__ import annotations

import dataclasses
import random

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_tensor, fail
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType

SLUG = "tree-attention-mask"
RTOL = 1e-9
RANK_P = [0.60, 0.15, 0.08, 0.05]
S_SPEC = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
S_8B = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", hbm_bytes_per_s=2.2e12,
                              bf16_dense_flops=610e12, fp8_dense_flops=1220e12)
ODD_MODEL = specs.ModelConfig(name="made-up-13b", n_layers=40, hidden_size=5120, n_heads=40,
                              n_kv_heads=8, head_dim=128, ffn_size=13824, vocab_size=100352)
STEP_MODELS = [
    ("s-spec-70b-tp8", S_SPEC),
    ("8b-h100", S_8B),
    ("70b-h200-tp4-fp8", StepModel(specs.LLAMA_3_1_70B, specs.H200_SXM, 4, dtype=DType.FP8,
                                   kv_dtype=DType.FP8, mfu=0.5, mbu=0.85, t_fixed_s=0.001)),
    ("made-up-13b-tp2", StepModel(ODD_MODEL, ODD_GPU, 2, mfu=0.7, mbu=0.75, t_fixed_s=0.0015)),
]
# BF16 weights with an FP8 KV cache: at c >= 4096 attention is a large share of a verify step, so
# KV bytes counted with the weights' dtype (twice kvb) move the step times and the crossover.
S_SPEC_KV8 = dataclasses.replace(S_SPEC, kv_dtype=DType.FP8)
S_8B_KV8 = dataclasses.replace(S_8B, kv_dtype=DType.FP8)
ODD_KV8 = dataclasses.replace(STEP_MODELS[3][1], kv_dtype=DType.FP8)

# Medusa-style choices (paths of top-k ranks, 0-based), numbered like generate_medusa_buffers:
# sorted by (length, path), node i+1 = choice i.
MEDUSA_CHOICES = [[0], [1], [2], [0, 0], [0, 1], [1, 0], [2, 0], [0, 0, 0], [0, 1, 0], [0, 0, 0, 0]]


def medusa_tree(choices):
    ordered = sorted(choices, key=lambda c: (len(c), c))
    parents, ranks = [-1], [0]
    for c in ordered:
        parents.append(0 if len(c) == 1 else ordered.index(c[:-1]) + 1)
        ranks.append(c[-1] + 1)
    return parents, ranks


def random_tree(rng: random.Random, n: int, deep: float) -> list[int]:
    """n drafts; each attaches to the previous node with probability `deep`, else anywhere."""
    parents = [-1]
    for i in range(1, n + 1):
        parents.append(i - 1 if rng.random() < deep else rng.randrange(i))
    return parents


def ranked(parents, n_ranks, rng: random.Random):
    """Distinct ranks among siblings, lowest first, for a random tree (None if a node has more
    children than ranks)."""
    nxt, ranks = {}, [0]
    for i in range(1, len(parents)):
        r = nxt.get(parents[i], 0) + 1
        if r > n_ranks:
            return None
        nxt[parents[i]] = r
        ranks.append(r)
    return ranks


def _check_dict(out, exp, keys):
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {list(keys)}")
    for k in keys:
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def _check_accept(out, exp):
    if not isinstance(out, dict) or set(out) != {"path", "emitted"}:
        fail("expected a dict with exactly the keys ['path', 'emitted']")
    for k in ("path", "emitted"):
        v = out[k]
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            fail(f"[{k!r}]: expected a list of ints, got {type(v).__name__}")
    if len(out["path"]) != len(exp["path"]):
        fail(f"['path']: {len(out['path'])} accepted drafts, which is not the longest accepted path")
    if out["path"] != exp["path"]:
        fail("['path']: right length, but not the path the tie rule picks (or not an accepted path)")
    if out["emitted"] != exp["emitted"]:
        fail("['emitted']: the accepted drafts' tokens followed by the target's token after the "
             "last accepted node were expected")


def grade(g: Grading) -> None:
    ref = g.reference()
    story_parents, story_ranks = ref.best_tree(10, RANK_P)
    med_parents, med_ranks = medusa_tree(MEDUSA_CHOICES)

    # -- mask and positions ------------------------------------------------------------------
    trees = [("example-5-drafts-prefix-3", [-1, 0, 1, 1, 0, 2], 3),
             ("chain-6-no-prefix", [-1, 0, 1, 2, 3, 4, 5], 0),
             ("star-5-prefix-7", [-1, 0, 0, 0, 0, 0], 7),
             ("root-only-no-prefix", [-1], 0),
             ("root-only-prefix-9", [-1], 9),
             ("medusa-choices-10-prefix-21", med_parents, 21),
             ("best-10-node-tree-prefix-512", story_parents, 512),
             ("tuple-parents-prefix-2", (-1, 0, 0, 1, 1, 2), 2)]
    for k in range(8):
        rng = random.Random(f"{SLUG}:mask:{k}")
        n = rng.randrange(2, 61)
        trees.append((f"random-{n}-drafts-{k}", random_tree(rng, n, deep=(0.2, 0.5, 0.8)[k % 3]),
                      rng.randrange(0, 601)))
    for name, parents, s in trees:
        with g.case(f"mask-{name}"):
            out = g.call("tree_attention_mask", parents, s)
            expect_tensor(out, ref.tree_attention_mask(parents, s), name="mask", dtype=torch.bool)
    for name, parents, s in trees:
        with g.case(f"positions-{name}"):
            out = g.call("tree_position_ids", parents, s)
            expect_tensor(out, ref.tree_position_ids(parents, s), name="position_ids",
                          dtype=torch.int64)

    # -- acceptance --------------------------------------------------------------------------
    accepts = [
        ("example", [-1, 0, 1, 1, 0, 2], [5, 11, 12, 13, 21, 14], [11, 12, 99, 7, 7, 15]),
        ("nothing-accepted", [-1, 0, 0, 1], [5, 3, 4, 6], [9, 6, 2, 2]),
        ("root-only", [-1], [4], [8]),
        ("all-of-a-chain-accepted", [-1, 0, 1, 2], [1, 2, 3, 4], [2, 3, 4, 5]),
        # siblings 1 and 2 carry the same token; only the later one's subtree goes deeper
        ("duplicate-siblings-longer-via-later", [-1, 0, 0, 2], [0, 7, 7, 9], [7, 5, 9, 1]),
        # two accepted paths of depth 2: [1, 3] and [2, 4]; the smaller final index wins
        ("duplicate-siblings-depth-tie", [-1, 0, 0, 1, 2], [0, 7, 7, 3, 3], [7, 3, 3, 8, 9]),
        # depth tie between [1, 4] and [2, 3]: the deepest node with the smallest index is 3
        ("depth-tie-final-index-decides", [-1, 0, 0, 2, 1], [0, 7, 7, 3, 3], [7, 3, 3, 8, 9]),
        # node 3 matches its parent's target token but its parent 2 was rejected
        ("match-below-a-rejection", [-1, 0, 1, 2, 1], [0, 5, 6, 7, 4], [5, 9, 7, 2, 1]),
        ("medusa-tree-third-branch", med_parents,
         [0, 10, 11, 12, 20, 21, 22, 23, 30, 31, 40], [12, 20, 22, 23, 30, 31, 32, 40, 50, 51, 60]),
        # the statement allows tuples for parents, tokens and target_next
        ("tuple-inputs", (-1, 0, 1, 1, 0, 2), (5, 11, 12, 13, 21, 14), (11, 12, 99, 7, 7, 15)),
    ]
    for k in range(10):
        rng = random.Random(f"{SLUG}:accept:{k}")
        n = rng.randrange(3, 120 if k < 8 else 400)
        parents = random_tree(rng, n, deep=0.6)
        vocab = (2, 3, 5)[k % 3]
        tokens = [rng.randrange(vocab) for _ in parents]
        target = [rng.randrange(vocab) for _ in parents]
        accepts.append((f"random-{n}-drafts-vocab-{vocab}-{k}", parents, tokens, target))
    for name, parents, tokens, target in accepts:
        with g.case(f"accept-{name}"):
            _check_accept(g.call("accept_tree", parents, tokens, target),
                          ref.accept_tree(parents, tokens, target))

    # -- tree against chain ------------------------------------------------------------------
    keys = ("tree_accepted", "chain_accepted", "tree_step_s", "chain_step_s", "throughput_ratio")
    costs = [("story-b1-c512", S_SPEC, story_parents, story_ranks, RANK_P, 5, 512, 1),
             ("story-b26-c512", S_SPEC, story_parents, story_ranks, RANK_P, 5, 512, 26),
             ("story-b200-c4096", S_SPEC, story_parents, story_ranks, RANK_P, 5, 4096, 200),
             ("medusa-tree-8b-b40", S_8B, med_parents, med_ranks, [0.5, 0.2, 0.1], 4, 1000, 40),
             ("chain-len-0", S_SPEC, med_parents, med_ranks, [0.7, 0.2, 0.1], 0, 64, 8),
             # the chain's p1 is rank_probs[0], here not the largest entry
             ("rank-1-not-likeliest-8b-medusa-b16", S_8B, med_parents, med_ranks, [0.3, 0.45, 0.1],
              4, 1000, 16),
             ("tuple-ranks-and-probs", S_SPEC, tuple(med_parents), tuple(med_ranks),
              (0.6, 0.2, 0.1), 3, 700, 5),
             # a rank probability of exactly 1 is allowed (every rank-1 draft is accepted), and so
             # is a sum of exactly 1 + 1e-9
             ("rank-1-certain-sum-at-the-limit", S_SPEC, med_parents, med_ranks, [1.0, 1e-9, 0.0], 4,
              512, 4),
             ("one-rank-chain-tree-no-context", S_8B, [-1, 0, 1, 2], [0, 1, 1, 1], [0.7], 2, 0, 3),
             ("fp8-kv-story-b32-c16384", S_SPEC_KV8, story_parents, story_ranks, RANK_P, 5, 16384,
              32),
             ("fp8-kv-medusa-tree-8b-b16-c8192", S_8B_KV8, med_parents, med_ranks,
              [0.5, 0.2, 0.1], 4, 8192, 16)]
    for k in range(10):
        rng = random.Random(f"{SLUG}:cost:{k}")
        sm_name, sm = STEP_MODELS[k % len(STEP_MODELS)]
        n_ranks = rng.randrange(2, 6)
        raw = sorted((rng.uniform(0.05, 1.0) for _ in range(n_ranks)), reverse=True)
        total = rng.uniform(0.5, 0.98)
        probs = [total * x / sum(raw) for x in raw]
        ranks = None
        while ranks is None:
            parents = random_tree(rng, rng.randrange(2, 40), deep=0.5)
            ranks = ranked(parents, n_ranks, rng)
        costs.append((f"random-{sm_name}-{len(parents) - 1}-drafts-{k}", sm, parents, ranks, probs,
                      rng.randrange(0, 9), rng.randrange(0, 8193), rng.choice([1, 3, 17, 64, 300])))
    for name, sm, parents, ranks, probs, chain, ctx, b in costs:
        with g.case(f"cost-{name}"):
            _check_dict(g.call("tree_vs_chain", sm, parents, ranks, probs, chain, ctx, b),
                        ref.tree_vs_chain(sm, parents, ranks, probs, chain, ctx, b), keys)

    # -- crossover ---------------------------------------------------------------------------
    chain5 = [-1, 0, 1, 2, 3, 4]
    crosses = [("story-c512", S_SPEC, story_parents, story_ranks, RANK_P, 5, 512, 1024),
               ("story-c4096", S_SPEC, story_parents, story_ranks, RANK_P, 5, 4096, 1024),
               ("story-max-batch-26", S_SPEC, story_parents, story_ranks, RANK_P, 5, 512, 26),
               ("story-max-batch-25", S_SPEC, story_parents, story_ranks, RANK_P, 5, 512, 25),
               ("story-max-batch-1", S_SPEC, story_parents, story_ranks, RANK_P, 5, 512, 1),
               # the "tree" is the chain itself: equal throughput at every batch is not a win
               ("tree-equal-to-chain", S_SPEC, chain5, [0] * 6, [0.5, 0.25], 5, 512, 64),
               ("8b-medusa-tree", S_8B, med_parents, med_ranks, [0.55, 0.2, 0.1], 3, 2048, 1024),
               ("made-up-13b", STEP_MODELS[3][1], story_parents, story_ranks, RANK_P, 4, 300, 1024),
               ("h200-fp8-story-tree", STEP_MODELS[2][1], story_parents, story_ranks, RANK_P, 5,
                1500, 1024),
               # rank 2 is likelier than rank 1: the chain's p1 is still rank_probs[0] (37; 33
               # with max(rank_probs))
               ("rank-1-not-likeliest-story-tree", S_SPEC, story_parents, story_ranks,
                [0.35, 0.4, 0.1, 0.05], 5, 512, 1024),
               # FP8 KV under BF16 weights (throughput ratio >= 1e-3 away from 1 up to the
               # crossover); with KV bytes from the weights' dtype: 40, 34, 25, 56 and 141
               ("fp8-kv-story-c32768", S_SPEC_KV8, story_parents, story_ranks, RANK_P, 5, 32768,
                1024),
               ("fp8-kv-story-chain-4-c16384", S_SPEC_KV8, story_parents, story_ranks, RANK_P, 4,
                16384, 1024),
               ("fp8-kv-8b-story-c4096", S_8B_KV8, story_parents, story_ranks, RANK_P, 5, 4096,
                1024),
               ("fp8-kv-8b-medusa-tree-c8192", S_8B_KV8, med_parents, med_ranks, [0.5, 0.2, 0.1],
                4, 8192, 1024),
               ("fp8-kv-made-up-13b-medusa-tree-c8192", ODD_KV8, med_parents, med_ranks,
                [0.55, 0.2, 0.1], 3, 8192, 1024)]
    for name, sm, parents, ranks, probs, chain, ctx, mb in crosses:
        if name == "tree-equal-to-chain":
            ranks = [0] + [1] * 5
        with g.case(f"crossover-{name}"):
            out = g.call("crossover_batch", sm, parents, ranks, probs, chain, ctx, mb)
            exp = ref.crossover_batch(sm, parents, ranks, probs, chain, ctx, mb)
            if exp is None:
                if out is not None:
                    fail(f"the tree still wins at every batch up to max_batch={mb}: expected None, "
                         f"got {out!r}")
            elif not (isinstance(out, int) and not isinstance(out, bool)) or out != exp:
                fail(f"got {out!r}, which is not the first batch at which the tree no longer wins")

    # -- input checks ------------------------------------------------------------------------
    ok_par, ok_ranks = [-1, 0, 0, 1], [0, 1, 2, 1]
    checks = [
        ("mask-root-parent-not-minus-one", "tree_attention_mask", ([0, 0, 1], 4)),
        ("mask-forward-parent", "tree_attention_mask", ([-1, 0, 3, 1], 4)),
        ("mask-self-parent", "tree_attention_mask", ([-1, 0, 2], 4)),
        ("mask-negative-parent", "tree_attention_mask", ([-1, 0, -1], 4)),
        ("mask-empty-parents", "tree_attention_mask", ([], 4)),
        ("mask-negative-prefix", "tree_attention_mask", ([-1, 0], -1)),
        ("positions-forward-parent", "tree_position_ids", ([-1, 2, 0], 4)),
        ("positions-negative-prefix", "tree_position_ids", ([-1, 0], -3)),
        ("accept-tokens-too-short", "accept_tree", (ok_par, [1, 2, 3], [1, 2, 3, 4])),
        ("accept-target-too-long", "accept_tree", (ok_par, [1, 2, 3, 4], [1, 2, 3, 4, 5])),
        ("accept-bad-parents", "accept_tree", ([-1, 1], [1, 2], [1, 2])),
        ("accept-float-token", "accept_tree", (ok_par, [1, 2.0, 3, 4], [1, 2, 3, 4])),
        ("mask-float-prefix", "tree_attention_mask", ([-1, 0], 2.5)),
        ("cost-empty-probs", "tree_vs_chain", (S_SPEC, [-1], [0], [], 5, 512, 1)),
        ("cost-last-rank-beyond-probs", "tree_vs_chain",
         (S_SPEC, ok_par, [0, 1, 2, 5], RANK_P, 5, 512, 1)),
        ("cost-not-a-step-model", "tree_vs_chain", ("70b", ok_par, ok_ranks, RANK_P, 5, 512, 1)),
        ("cost-duplicate-sibling-rank", "tree_vs_chain",
         (S_SPEC, ok_par, [0, 1, 1, 1], RANK_P, 5, 512, 1)),
        ("cost-rank-zero", "tree_vs_chain", (S_SPEC, ok_par, [0, 1, 0, 1], RANK_P, 5, 512, 1)),
        ("cost-rank-beyond-probs", "tree_vs_chain", (S_SPEC, ok_par, [0, 1, 5, 1], RANK_P, 5, 512, 1)),
        ("cost-ranks-wrong-length", "tree_vs_chain", (S_SPEC, ok_par, [0, 1, 2], RANK_P, 5, 512, 1)),
        ("cost-probs-sum-above-one", "tree_vs_chain",
         (S_SPEC, ok_par, ok_ranks, [0.7, 0.4], 5, 512, 1)),
        ("cost-negative-prob", "tree_vs_chain", (S_SPEC, ok_par, ok_ranks, [0.7, -0.1], 5, 512, 1)),
        ("cost-nan-prob", "tree_vs_chain", (S_SPEC, ok_par, ok_ranks, [float("nan"), 0.1], 5, 512, 1)),
        ("cost-negative-chain", "tree_vs_chain", (S_SPEC, ok_par, ok_ranks, RANK_P, -1, 512, 1)),
        ("cost-negative-context", "tree_vs_chain", (S_SPEC, ok_par, ok_ranks, RANK_P, 5, -1, 1)),
        ("cost-batch-zero", "tree_vs_chain", (S_SPEC, ok_par, ok_ranks, RANK_P, 5, 512, 0)),
        ("crossover-max-batch-zero", "crossover_batch", (S_SPEC, ok_par, ok_ranks, RANK_P, 5, 512, 0)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
