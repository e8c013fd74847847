"""Public cases for chunked-prefill-damage (literal expected values)."""

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.step_model import StepModel

# S-serve: Llama 3.3 70B (the LLAMA_3_1_70B table), 8 x H100 SXM, BF16, mfu 0.40, mbu 0.80, 3 ms.
S_SERVE = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.40, mbu=0.80, t_fixed_s=0.003)

STEPS = [
    (0.0, 0.3850587087393065, [[0, 1], [1, 1], [2, 8190]]),
    (0.3850587087393065, 0.4405961772688721, [[0, 1], [1, 1], [2, 8190]]),
    (0.8256548860081786, 0.23583601724460052, [[0, 1], [2, 3620], [3, 500]]),
    (1.061490903252779, 0.009796712883582089, [[2, 1], [3, 1]]),
]
REQUESTS = [
    (None, None, None, 1.061490903252779, 3, 0.4405961772688721, 0.3382160972567363),
    (None, None, None, 0.8256548860081786, 2, 0.4405961772688721, 0.4405961772688721),
    (0.0, 1.061490903252779, 1.061490903252779, 1.0712876161363611, 2, 0.009796712883582082,
     0.009796712883582082),
    (0.8256548860081786, 1.061490903252779, 1.0564909032527792, 1.0712876161363611, 2,
     0.009796712883582082, 0.009796712883582082),
]
KEYS = ("admitted_s", "first_token_s", "ttft_s", "finish_s", "tokens", "max_gap_s", "mean_gap_s")


def grade(g: Grading) -> None:
    with g.case("two-warm-decoders-a-20k-prompt-and-a-short-arrival"):
        out = g.call("simulate_engine", S_SERVE, [[1000, 3], [3000, 2]],
                     [[0.0, 20000, 2], [0.005, 500, 2]], 8192, 8)
        if not isinstance(out, dict) or set(out) != {"steps", "requests"}:
            fail("expected a dict with the keys 'steps' and 'requests'")
        expect_equal(len(out["steps"]), len(STEPS), name="number of steps")
        for i, (start, dur, rows) in enumerate(STEPS):
            s = out["steps"][i]
            expect_equal([list(r) for r in s["rows"]], rows, name=f"steps[{i}]['rows']")
            expect_close(s["start_s"], start, name=f"steps[{i}]['start_s']", rtol=1e-9, atol=1e-12)
            expect_close(s["duration_s"], dur, name=f"steps[{i}]['duration_s']", rtol=1e-9)
        expect_equal(len(out["requests"]), 4, name="number of requests")
        for i, exp in enumerate(REQUESTS):
            r = out["requests"][i]
            for k, e in zip(KEYS, exp):
                if e is None or k == "tokens":
                    expect_equal(r[k], e, name=f"requests[{i}][{k!r}]")
                else:
                    expect_close(r[k], e, name=f"requests[{i}][{k!r}]", rtol=1e-9, atol=1e-12)
    with g.case("rejects-budget-below-seats", group=INPUT_CHECKS):
        g.raises("ValueError", "simulate_engine", S_SERVE, [], [[0.0, 10, 1]], 64, 128)
