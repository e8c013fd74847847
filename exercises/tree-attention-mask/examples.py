"""Public cases for tree-attention-mask (literal expected values)."""

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, expect_tensor
from inferprep.sim.step_model import StepModel

PARENTS = [-1, 0, 1, 1, 0, 2]
TREE10 = [-1, 0, 1, 2, 0, 3, 4, 1, 0, 5, 6]          # the best ten-node tree for RANK_P
RANKS10 = [0, 1, 1, 1, 2, 1, 1, 2, 3, 1, 1]
RANK_P = [0.60, 0.15, 0.08, 0.05]
PRESET = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)


def grade(g: Grading) -> None:
    with g.case("example-mask-prefix-2"):
        tree = [[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0],
                [1, 1, 0, 1, 0, 0], [1, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1]]
        want = torch.cat([torch.ones(6, 2, dtype=torch.bool), torch.tensor(tree, dtype=torch.bool)], 1)
        expect_tensor(g.call("tree_attention_mask", PARENTS, 2), want, name="mask")
    with g.case("example-positions-prefix-100"):
        expect_tensor(g.call("tree_position_ids", PARENTS, 100),
                      torch.tensor([100, 101, 102, 102, 101, 103]), name="position_ids")
    with g.case("example-accept"):
        out = g.call("accept_tree", PARENTS, [5, 11, 12, 13, 21, 14], [11, 12, 99, 7, 7, 15])
        expect_equal(out, {"path": [1, 2], "emitted": [11, 12, 99]})
    with g.case("ten-node-tree-vs-five-chain-batch-1"):
        r = g.call("tree_vs_chain", PRESET, TREE10, RANKS10, RANK_P, 5, 512, 1)
        expect_close(r["tree_accepted"], 1.84736, name="tree_accepted", rtol=1e-9)
        expect_close(r["chain_accepted"], 1.38336, name="chain_accepted", rtol=1e-9)
        expect_close(r["tree_step_s"], 0.009491362197014925, name="tree_step_s", rtol=1e-9)
        expect_close(r["chain_step_s"], 0.009491285779104476, name="chain_step_s", rtol=1e-9)
        expect_close(r["throughput_ratio"], 1.1946735176467822, name="throughput_ratio", rtol=1e-9)
    with g.case("ten-node-tree-crossover-c512"):
        expect_equal(g.call("crossover_batch", PRESET, TREE10, RANKS10, RANK_P, 5, 512, 1024), 26)
    with g.case("rejects-forward-parent", group=INPUT_CHECKS):
        g.raises("ValueError", "tree_attention_mask", [-1, 2, 0], 4)
