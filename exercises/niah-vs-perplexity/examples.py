"""Public cases: two small demo models with every outcome tabled here (the hidden models are the
grader's own toy; these tables are what that toy gives for the statement's demo)."""

import math

from inferprep.grading import Grading, fail

FACTORS = ["weights", "kv_cache", "rope_scaling"]
LENGTHS = [2048, 4096, 8192, 16384, 32768, 65536]
DEPTHS = [0.0, 0.25, 0.5, 0.75, 1.0]


class TableModel:
    """One harmful factor (``cause``); outcomes depend only on whether it is served."""

    def __init__(self, cause: str, failing_cells: set, rope_ppl: bool):
        self.cause, self.failing_cells, self.rope_ppl = cause, failing_cells, rope_ppl
        self.budget = {"perplexity": 2 * len(LENGTHS) + 3, "niah": len(LENGTHS) * len(DEPTHS) + 3}
        self.calls = {"perplexity": 0, "niah": 0}
        self.log = set()

    def attrs(self) -> dict:
        return {"factors": FACTORS, "lengths": LENGTHS, "depths": DEPTHS, "original_context": 16384,
                "ppl_tol": 0.01, "budget": dict(self.budget)}

    def _count(self, kind: str) -> None:
        self.calls[kind] += 1
        if self.calls[kind] > self.budget[kind]:
            raise RuntimeError(f"{kind} budget exhausted")

    def _check(self, served, length) -> tuple:
        if len(set(served)) != len(served) or any(f not in FACTORS for f in served) or length not in LENGTHS:
            raise ValueError("bad experiment")
        return tuple(sorted(served))

    def ppl_value(self, served, length: int) -> float:
        p = 6.0 * (1.0 + 0.3 * math.sqrt(1024.0 / length))       # the reference stack
        if "weights" in served:
            p *= 1.0 + 0.004                                       # a harmless re-quantization
        if self.rope_ppl and "rope_scaling" in served and length > 16384:
            p *= 1.0 + 0.3 * math.log2(length / 16384)
        return p

    def perplexity(self, served, length) -> float:
        s = self._check(served, length)
        self._count("perplexity")
        self.log.add(("perplexity", s, length))
        return self.ppl_value(s, length)

    def niah(self, served, length, depth) -> bool:
        s = self._check(served, length)
        if depth not in DEPTHS:
            raise ValueError("bad depth")
        self._count("niah")
        self.log.add(("niah", s, length, float(depth)))
        return not (self.cause in s and (length, depth) in self.failing_cells)


def check(g: Grading, model: TableModel) -> None:
    got = g.call("diagnose", g.host(model, ["perplexity", "niah"], model.attrs()))
    if any(model.calls[k] > model.budget[k] for k in model.calls):
        fail(f"over the budget: {model.calls} calls for {model.budget}")
    if not isinstance(got, dict) or got.get("cause") != model.cause:
        fail(f"expected cause {model.cause!r}, got {got!r}"[:300])
    exps = set()
    evidence = got.get("evidence")
    for e in evidence if isinstance(evidence, (list, tuple)) else []:
        try:
            e = (e[0], tuple(sorted(e[1])), e[2], *(float(x) for x in e[3:]))
            hash(e)
        except (TypeError, IndexError, KeyError, ValueError):
            fail(f"malformed experiment in the evidence: {e!r}"[:200])
        if e not in model.log:
            fail(f"evidence lists an experiment that was not run: {e!r}"[:200])
        exps.add(e)
    for e in exps:       # a pair differing by the cause alone, the one with it regressing
        rest = tuple(f for f in e[1] if f != model.cause)
        if model.cause not in e[1]:
            continue
        if e[0] == "niah" and (e[2], e[3]) in model.failing_cells and (not rest or ("niah", rest, *e[2:]) in exps):
            return
        ref = model.ppl_value((), e[2])
        if (e[0] == "perplexity" and ("perplexity", (), e[2]) in exps and model.ppl_value(e[1], e[2]) > 1.01 * ref
                and (not rest or (("perplexity", rest, e[2]) in exps and model.ppl_value(rest, e[2]) <= 1.01 * ref))):
            return
    fail("the evidence does not isolate the cause")


def grade(g: Grading) -> None:
    with g.case("demo: retrieval lost past 16K"):
        check(g, TableModel("rope_scaling", {(32768, 0.0), (32768, 0.25), (65536, 0.0), (65536, 0.25),
                                             (65536, 0.5)}, rope_ppl=True))
    with g.case("demo: rare failures at length"):
        check(g, TableModel("kv_cache", {(16384, 0.75), (32768, 0.75), (65536, 1.0)}, rope_ppl=False))
