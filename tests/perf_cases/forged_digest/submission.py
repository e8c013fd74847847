# Correct, and it replaces the harness's output digest (the commitment made inside the timed window)
# with a constant, as a submission that wanted to skip the hashing or finish its work later would.
import sys

wire = sys.modules.get("inferprep.runner.perf_wire")
if wire is not None:
    wire.digest = lambda tensors, sketch: 0


def add(x, y):
    return x + y
