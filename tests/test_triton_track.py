"""The Triton track: exercises that need the optional ``triton`` extra, the grader's kernel launcher
(``g.launch``: the submission's @triton.jit kernel on the grader's guarded buffers) and the hostile
kernels it must refuse. The four exercises' own checks run in test_exercises.py."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch
from typer.testing import CliRunner

from inferprep import catalog
from inferprep.catalog import ExerciseMeta
from inferprep.grading import WrongAnswer
from inferprep.grading.kernels import check_buffers, kernel_input, kernel_output
from inferprep.runner import judge

TRITON_SLUGS = ["triton-flash-attention", "triton-moe-gemm", "triton-paged-decode", "triton-softmax"]
needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                  reason="triton is not installed (pip install 'inferprep[triton]')")


# -- the optional extra --------------------------------------------------------------------------

@pytest.fixture
def without_triton(monkeypatch):
    """This install as if triton were absent (its module cannot be found)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None if name == "triton" else real(name, *a, **k))
    catalog.extra_installed.cache_clear()
    yield
    catalog.extra_installed.cache_clear()


def test_the_track_declares_triton():
    for slug in TRITON_SLUGS:
        ex = catalog.get(slug)
        assert ex.meta.requires == ["triton"] and ex.meta.track == catalog.Track.KERNELS


def test_without_triton_the_exercises_are_unavailable_with_the_reason(without_triton):
    for slug in TRITON_SLUGS:
        assert catalog.get(slug).unavailable == "needs triton: pip install 'inferprep[triton]'"
    assert catalog.get("rope").unavailable is None


def test_without_triton_grading_says_why(without_triton):
    v = judge.grade(catalog.get("triton-softmax"), "x = 1\n")
    assert v.status.value == "internal_error"
    assert "cannot be graded on this install: needs triton: pip install 'inferprep[triton]'" in v.message


def test_without_triton_the_cli_lists_and_refuses(without_triton, tmp_path):
    from inferprep.cli import app

    runner = CliRunner()
    listed = {e["slug"]: e for e in json.loads(runner.invoke(app, ["list", "--json"]).stdout)}
    assert listed["triton-moe-gemm"]["unavailable"].startswith("needs triton")
    assert listed["rope"]["unavailable"] is None
    sub = tmp_path / "k.py"
    sub.write_text("x = 1\n")
    r = runner.invoke(app, ["grade", "triton-softmax", str(sub), "--no-record"])
    assert r.exit_code == 2 and "pip install 'inferprep[triton]'" in " ".join(r.output.split())


def test_without_triton_the_web_list_says_unavailable(without_triton, tmp_path):
    from fastapi.testclient import TestClient

    from inferprep.settings import Settings
    from inferprep.web import create_app

    app = create_app(Settings(data_dir=tmp_path / "data", grading_threads=1), grade=lambda *a, **k: None,
                     devices=("cpu",))
    with TestClient(app) as c:
        html = c.get("/exercises", params={"q": "triton"}).text
    assert html.count("needs triton: pip install") == 4


@pytest.mark.parametrize("edit,needle", [
    ({"requires": ["cuda-magic"]}, "not an optional extra"),
    ({"sources": [], "collections": ["Jane Street"]}, "without sources"),
    ({"sources": ["JS-21"], "collections": []}, "at least one collection"),
])
def test_metadata_rules(edit, needle):
    raw = catalog.get("triton-softmax").meta.model_dump(mode="json") | edit
    with pytest.raises(ValueError, match=needle):
        ExerciseMeta.model_validate(raw)


# -- guarded buffers (the parent's side, no triton needed) ---------------------------------------

def test_a_kernel_input_sits_between_poisoned_bands_and_gaps():
    x = torch.arange(6, dtype=torch.float32).view(2, 3)
    a = kernel_input(x, name="x", row_gap=2, guard=4)
    assert a.stride == (5, 1) and a.offset == 4 and a.buffer.numel() == 4 + 8 + 2 + 4
    assert torch.equal(a.view(a.buffer), x)
    assert int(a.buffer.isnan().sum()) == a.buffer.numel() - 6      # bands and gaps read as NaN
    ids = kernel_input(torch.tensor([3, 4], dtype=torch.int32), guard=2)
    assert ids.buffer.tolist() == [-1, -1, 3, 4, -1, -1]


def test_check_buffers_sees_stray_stores_input_writes_and_unwritten_outputs():
    x = kernel_input(torch.ones(2, 3), name="x", row_gap=1, guard=4)
    out = kernel_output((2, 3), torch.float32, name="out", row_gap=1, guard=4)

    def launched(write_out=True, stray=None, touch_input=False):
        bx, bo = x.buffer.clone(), out.buffer.clone()
        if write_out:
            out.view(bo).fill_(0.5)
        if stray is not None:
            bo[stray] = float("nan")            # a NaN store: not the output's poison pattern
        if touch_input:
            x.view(bx)[1, 2] = 7.0
        return [bx, bo]

    (y,) = check_buffers([x, out], launched())
    assert torch.equal(y, torch.full((2, 3), 0.5))
    with pytest.raises(WrongAnswer, match="outside out"):
        check_buffers([x, out], launched(stray=4 + 3))           # the gap after row 0
    with pytest.raises(WrongAnswer, match="outside out"):
        check_buffers([x, out], launched(stray=-1))              # the trailing guard band
    with pytest.raises(WrongAnswer, match="input x"):
        check_buffers([x, out], launched(touch_input=True))
    with pytest.raises(WrongAnswer, match="6 of 6 element"):
        check_buffers([x, out], launched(write_out=False))
    with pytest.raises(WrongAnswer, match="malformed buffer"):
        check_buffers([x, out], [x.buffer, out.buffer[:-1]])


# -- hostile kernels through the sandbox ---------------------------------------------------------

HEADER = '''import torch
import triton
import triton.language as tl


def block_sizes(n_cols):
    return {"BLOCK_SIZE": 1024}
'''
ROW = '''
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
'''
SIGNATURE = "def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):"

HOSTILE = {
    "plain-python-function": (HEADER + "\n\ndef softmax_kernel(out_ptr, in_ptr, *args, **kwargs):\n"
                              "    out_ptr.copy_(torch.softmax(in_ptr, -1))\n", "must be a @triton.jit kernel"),
    "torch-inside-the-kernel": (HEADER + "\n\n@triton.jit\n" + SIGNATURE + ROW
                                + "    tl.store(out_ptr + row * out_row_stride + cols, torch.softmax(x, 0), mask=mask)\n",
                                "uses torch.softmax"),
    "a-torch-result-computed-at-import": (HEADER + "\nANSWER = torch.softmax(torch.zeros(3, 1024), -1)\n\n\n@triton.jit\n"
                                          + SIGNATURE + ROW + "    tl.store(out_ptr + cols, ANSWER, mask=mask)\n",
                                          "uses ANSWER"),
    "torch-in-a-jit-helper": (HEADER + "\n\n@triton.jit\ndef helper(x):\n    return torch.exp(x)\n\n\n@triton.jit\n"
                              + SIGNATURE + ROW + "    tl.store(out_ptr + row * out_row_stride + cols, helper(x), mask=mask)\n",
                              "uses torch.exp"),
    "reaching-through-a-dunder": (HEADER + "\n\n@triton.jit\n" + SIGNATURE
                                  + "\n    tl.__builtins__\n", "cannot use"),
    "out-of-bounds-store": (HEADER + "\n\n@triton.jit\n" + SIGNATURE + ROW
                            + "    y = tl.exp(x - tl.max(x, 0))\n"
                            + "    tl.store(out_ptr + row * out_row_stride + cols, y / tl.sum(y, 0))\n",
                            "outside out"),
    "writes-into-its-input": (HEADER + "\n\n@triton.jit\n" + SIGNATURE + ROW
                              + "    y = tl.exp(x - tl.max(x, 0))\n"
                              + "    tl.store(out_ptr + row * out_row_stride + cols, y / tl.sum(y, 0), mask=mask)\n"
                              + "    tl.store(in_ptr + row * in_row_stride + cols, y, mask=mask)\n",
                              "changed"),
    "returns-before-storing": (HEADER + "\n\n@triton.jit\n" + SIGNATURE + "\n    pass\n", "unwritten"),
    "patches-triton-at-import": (HEADER + "\n\n@triton.jit\n" + SIGNATURE + "\n    pass\n\n\n"
                                 "from triton.runtime import interpreter\n"
                                 "interpreter.GridExecutor.__call__ = lambda self, *a, **k: None\n",
                                 "changed Triton itself (triton.runtime.interpreter.GridExecutor.__call__)"),
    "helper-claiming-triton-language": (HEADER + "\n\ndef helper(x):\n    return x\n\n\n"
                                        "helper.__module__ = 'triton.language.standard'\n\n\n@triton.jit\n"
                                        + SIGNATURE + ROW
                                        + "    tl.store(out_ptr + row * out_row_stride + cols, helper(x), mask=mask)\n",
                                        "uses helper"),
    "kernel-of-a-subclass": (HEADER + "\n\n@triton.jit\n" + SIGNATURE + "\n    pass\n\n\n"
                             "softmax_kernel.__class__ = type('Fast', (type(softmax_kernel),), {})\n",
                             "must be a @triton.jit kernel, not Fast"),
    "kernel-method-shadowed": (HEADER + "\n\n@triton.jit\n" + SIGNATURE + "\n    pass\n\n\n"
                               "softmax_kernel.run = print\n", "run was replaced"),
}


@needs_triton
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_kernel_gets_a_clear_non_pass(name):
    code, needle = HOSTILE[name]
    v = judge.grade(catalog.get("triton-softmax"), code, fail_fast=True)
    if name == "out-of-bounds-store" and ("killed by" in v.cases[0].message or v.status.value == "time_limit"):
        # a store far past the guard band corrupts the child's own heap first: a crash or a hang
        # (which objects it hits depends on the heap's layout), also a non-pass
        return
    assert v.status.value in ("runtime_error", "wrong_answer"), (v.status, v.message)
    assert needle in v.cases[0].message, v.cases[0].message


@needs_triton
def test_the_reference_passes_the_public_examples_through_the_launcher():
    ex = catalog.get("triton-softmax")
    v = judge.grade(ex, ex.reference_path.read_text(), public=True)
    assert v.ok, (v.status, v.message, [c.message for c in v.cases])


def test_every_triton_exercise_is_checked_by_test_exercises():
    from test_exercises import SLUGS

    assert set(TRITON_SLUGS) <= set(SLUGS)
