"""Public cases for draft-length-per-batch (literal expected values)."""

import dataclasses

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.sim.step_model import StepModel

TARGET = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
EAGLE = dataclasses.replace(TARGET, model=dataclasses.replace(specs.LLAMA_3_1_70B, n_layers=1),
                            t_fixed_s=0.0002)
KV = 1_235_951


def grade(g: Grading) -> None:
    with g.case("night-step-times"):
        expect_close(g.call("spec_step_time", TARGET, EAGLE, 1, 2048, 0), 0.00951468494328358,
                     name="plain step", rtol=1e-9)
        expect_close(g.call("spec_step_time", TARGET, EAGLE, 1, 2048, 4), 0.011027622017910447,
                     name="g=4 step", rtol=1e-9)
    with g.case("night-speedup-g4"):
        expect_close(g.call("spec_speedup", TARGET, EAGLE, 1, 2048, 4, 0.8), 2.9004045344857254,
                     name="speedup", rtol=1e-9)
    with g.case("rush-hour-speedup-g4"):
        expect_close(g.call("spec_speedup", TARGET, EAGLE, 1024, 128, 4, 0.8), 0.7391751450875399,
                     name="speedup", rtol=1e-9)
    with g.case("best-at-night-and-rush-hour"):
        expect_equal(g.call("best_draft_length", TARGET, EAGLE, 1, 2048, 0.8, 8), 8, name="night")
        expect_equal(g.call("best_draft_length", TARGET, EAGLE, 1024, 128, 0.8, 8), 0, name="rush")
    with g.case("table-c2048"):
        expect_equal(g.call("draft_table", TARGET, EAGLE, 2048, 0.8, 8, 1024, KV),
                     [[1, 25, 8], [26, 28, 7], [29, 34, 6], [35, 41, 5], [42, 53, 4], [54, 90, 3],
                      [91, 600, 2]], name="table")
    with g.case("rejects-alpha-above-one", group=INPUT_CHECKS):
        g.raises("ValueError", "spec_speedup", TARGET, EAGLE, 1, 2048, 4, 1.5)
