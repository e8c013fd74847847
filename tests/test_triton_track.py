"""The Triton track: exercises that need the optional ``triton`` extra, the grader's kernel launcher
(``g.launch``: the submission's @triton.jit kernel on the grader's guarded buffers) and the hostile
kernels it must refuse. The four exercises' own checks run in test_exercises.py."""

from __future__ import annotations

import importlib.util
import json
import tomllib

import pytest
import torch
from typer.testing import CliRunner

from inferprep import catalog
from inferprep.catalog import ExerciseMeta
from inferprep.grading import WrongAnswer
from inferprep.grading.kernels import check_buffers, kernel_input, kernel_output
from inferprep.runner import judge, triton_source
from runner_support import ROOT

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

HEADER = '''import triton
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
    "plain-python-function": ("import torch\n" + HEADER + "\n\ndef softmax_kernel(out_ptr, in_ptr, *args, **kwargs):\n"
                              "    out_ptr.copy_(torch.softmax(in_ptr, -1))\n", "must be a @triton.jit kernel"),
    "torch-inside-the-kernel": ("import torch\n" + HEADER + "\n\n@triton.jit\n" + SIGNATURE + ROW
                                + "    tl.store(out_ptr + row * out_row_stride + cols, torch.softmax(x, 0), mask=mask)\n",
                                "uses torch.softmax"),
    "a-torch-result-computed-at-import": ("import torch\n" + HEADER + "\nANSWER = torch.softmax(torch.zeros(3, 1024), -1)\n\n\n@triton.jit\n"
                                          + SIGNATURE + ROW + "    tl.store(out_ptr + cols, ANSWER, mask=mask)\n",
                                          "uses ANSWER"),
    "torch-in-a-jit-helper": ("import torch\n" + HEADER + "\n\n@triton.jit\ndef helper(x):\n    return torch.exp(x)\n\n\n@triton.jit\n"
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


PARENT_REFUSES = {"plain-python-function": "line 1: import torch", "torch-inside-the-kernel": "line 1: import torch",
                  "a-torch-result-computed-at-import": "line 1: import torch", "torch-in-a-jit-helper": "line 1: import torch",
                  "reaching-through-a-dunder": "attributes starting with an underscore",
                  "helper-claiming-triton-language": "an assignment to an attribute or an item at the top level",
                  "kernel-method-shadowed": "an assignment to an attribute or an item at the top level",
                  "kernel-of-a-subclass": "an assignment to an attribute or an item at the top level",
                  "patches-triton-at-import": "from triton.runtime import"}
"""The hostile kernels the parent's read of the source (``runner.triton_source``) refuses before a child
exists; each is run again with that read switched off to show that the child's own checks hold too."""


@needs_triton
@pytest.mark.parametrize("layer", ["all", "child-only"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_kernel_gets_a_clear_non_pass(name, layer, monkeypatch):
    code, needle = HOSTILE[name]
    if layer == "child-only":
        monkeypatch.setattr(triton_source, "check", lambda code: None)
    v = judge.grade(catalog.get("triton-softmax"), code, fail_fast=True)
    if layer == "all" and name in PARENT_REFUSES:
        assert v.status.value == "invalid_submission" and PARENT_REFUSES[name] in v.message, (v.status, v.message)
        return
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


# -- what the parent reads before anything runs (runner.triton_source) ---------------------------

CASES_DIR = ROOT / "tests" / "triton_cases"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if p.is_dir())


def _case(name: str) -> tuple[str, dict]:
    return ((CASES_DIR / name / "submission.py").read_text(),
            tomllib.loads((CASES_DIR / name / "expected.toml").read_text()))


@needs_triton
@pytest.mark.parametrize("name", CASES)
def test_a_kernel_file_that_reaches_past_the_kernel_language_is_refused_by_the_parent(name):
    """Each case in tests/triton_cases/ got triton-softmax's answer around the child's checks (the
    launcher patched, the kernel's class swapped, Python reached from inside a kernel the interpreter
    runs); the parent refuses its text before a child exists."""
    code, exp = _case(name)
    v = judge.grade(catalog.get("triton-softmax"), code)
    assert v.status.value == exp["status"] and v.cases == [], (v.status, v.message)
    assert exp["message_contains"] in v.message, v.message


@needs_triton
@pytest.mark.parametrize("name", CASES)
def test_control_without_the_parents_read(name, monkeypatch):
    """The control, with the parent's read switched off: ``control = "passes"`` cases pass every hidden
    case (the child's own checks do not stop them, so the refusal above is what holds); otherwise the
    child's launcher refuses the case with the text given."""
    code, exp = _case(name)
    monkeypatch.setattr(triton_source, "check", lambda code: None)
    v = judge.grade(catalog.get("triton-softmax"), code, fail_fast=True)
    if exp["control"] == "passes":
        assert v.status.value == "passed", (v.status, v.message, [c.message for c in v.cases][:2])
    else:
        assert v.status.value == "runtime_error" and exp["control"] in v.cases[0].message, (v.status, v.message)


def test_every_honest_kernel_file_passes_the_parents_read():
    """The references, stubs, the Triton perf cases and every known-wrong variant that does not import
    torch or numpy (the cheats): nothing a kernel file needs is refused."""
    from inferprep.wrong_variants import WrongVariant

    files = [catalog.get(s).reference_path for s in TRITON_SLUGS] + [catalog.get(s).stub_path for s in TRITON_SLUGS]
    files += sorted((ROOT / "tests" / "perf_cases_triton").glob("*/submission.py"))
    codes = {str(f): f.read_text() for f in files}
    for slug in TRITON_SLUGS:
        ex = catalog.get(slug)
        for w in ex.wrong_paths:
            codes[str(w)] = WrongVariant(w, ex.reference_path).source()
    refused = {k: triton_source.check(c) for k, c in codes.items()}
    assert len(codes) >= 35
    cheats = {k for k, c in codes.items() if "/tests/wrong/" in k and ("import torch" in c or "import numpy" in c)}
    assert len(cheats) >= 7   # torch in or around the kernel, and the launcher and interpreter cheats
    assert {k for k, r in refused.items() if r is not None} == cheats, refused


@pytest.mark.parametrize("snippet, needle", [
    ("x = getattr(tl, 'core')", "the name 'getattr'"),
    ("x = '{0.__class__}'.format(1)", "the attribute .format"),
    ("x = tl.core", "not a name of the kernel language"),
    ("x = triton.runtime", "triton.runtime"),
    ("tl.load = print", "assignment to an attribute"),
    ("def f():\n    tl.load = print", "assignment to the attribute tl.load"),
    ("def f(g=lambda: 1):\n    return g", "a lambda"),
    ("class A:\n    pass", "classdef"),
    ("print(1)", "top-level expr"),
    ("import typing", "import typing"),                       # typing.get_type_hints evaluates strings
    ("x = getattr(tl, 'core')\ngetattr = 0", "is a built-in's"),  # the first use would read the real one
    ("y = [getattr(tl, 'core')] + [(getattr := 1) for _ in [1]]", "is a built-in's"),
    ("@triton.jit\ndef k(p: \"tensordesc<fp32[16],__import__('os')>\"):\n    pass", "string annotation"),
    ("w = tl.math.wraps", "not a name of the kernel language"),  # functools.wraps, re-exported
    ("def f(tl):\n    return tl.core", "the attribute .core"),
    ("from triton.language import core", "not a name of the kernel language"),
    ("import os", "import os"),
    ("x = __builtins__", "double underscore"),
    ("@tl.core.builtin\ndef f(x):\n    return x", "the decorator"),
])
def test_the_parents_read_refuses(snippet, needle):
    code = "import triton\nimport triton.language as tl\n" + snippet + "\n"
    refused = triton_source.check(code)
    assert refused is not None and needle in refused, refused


def test_the_parents_read_accepts_the_language():
    code = ("import math\nimport triton\nimport triton.language as tl\nfrom triton.language import constexpr\n"
            "LOG2E = 1 / math.log(2)\nD = {'a': 1}\n\n\ndef sizes(n):\n    return {'B': max(16, triton.next_power_of_2(n)), "
            "'a': D.get('a')}\n\n\n@triton.jit\ndef k(p, n, B: constexpr):\n    i = tl.arange(0, B)\n"
            "    x = tl.load(p + i, mask=i < n, other=0.0).to(tl.float32)\n    y = tl.math.exp2(x * LOG2E)\n"
            "    tl.store(p + i, y.to(p.dtype.element_ty), mask=i < n)\n\n\n@triton.jit\ndef h(q: \"*fp32\", B: \"tl.constexpr\"):\n"
            "    pass\n")
    assert triton_source.check(code) is None
    assert triton_source.check("def broken(:\n") is None   # the child reports the syntax error as usual
