"""WRONG: cheat: hard-codes the story's figures (crossover 26, the batch-1 costs) with a causal mask. Killed by mask-example-5-drafts-prefix-3."""

import torch


def _depths(parents):
    d = [0] * len(parents)
    for i in range(1, len(parents)):
        d[i] = d[parents[i]] + 1
    return d


def tree_attention_mask(parents, prefix_len):
    n = len(parents)
    return torch.cat([torch.ones(n, prefix_len, dtype=torch.bool),
                      torch.ones(n, n, dtype=torch.bool).tril()], dim=1)


def tree_position_ids(parents, prefix_len):
    return torch.tensor([prefix_len + d for d in _depths(parents)], dtype=torch.int64)


def accept_tree(parents, tokens, target_next):
    return {"path": [], "emitted": [target_next[0]]}


def tree_vs_chain(step_model, parents, ranks, rank_probs, chain_len, context_len, batch):
    return {"tree_accepted": 1.84736, "chain_accepted": 1.38336, "tree_step_s": 0.009491362197014925,
            "chain_step_s": 0.009491285779104476, "throughput_ratio": 1.1946735176467822}


def crossover_batch(step_model, parents, ranks, rank_probs, chain_len, context_len, max_batch):
    return 26 if max_batch >= 26 else None
