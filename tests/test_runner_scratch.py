"""Scratch runs (``runner.scratch.run``): the user's snippet runs in the sandboxed child with the
submission bound to ``solution``, under the exercise's limits, and nothing is graded. The hostile
snippets are runner cases (tests/runner_cases/scratch_*, run by test_runner_hostile.py)."""

import shutil

import pytest

from runner_support import FIXTURE_CONTENT, sandbox_modes
from inferprep import catalog
from inferprep.runner import scratch
from inferprep.runner.process import drain_cleanups

CORRECT = "def add(x, y):\n    return x + y\n"
# line numbers matter below: the traceback names solution.py line 5 and scratch.py line 3
RAISES_INSIDE = "import torch\n\n\ndef add(x, y):\n    return x[len(x)]\n"


def run(code: str, snippet: str, **kw):
    result = scratch.run(catalog.get("add-vectors"), code, snippet, **kw)
    drain_cleanups()
    return result


def test_snippet_sees_only_solution_and_prints(fixture_content):
    r = run(CORRECT, "import torch\n"
                     "print(solution.add(torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0])).tolist())\n"
                     "print(sorted(globals()))\n"
                     "print(solution.__file__.rsplit('/', 1)[-1], __name__)\n")
    assert r.status == "ok" and r.ok and r.message == "" and r.traceback == "", r
    lines = r.stdout.splitlines()
    assert lines[0] == "[11.0, 22.0]"
    # fresh globals: the harness's client, init message and module are not in the snippet's namespace
    assert lines[1] == "['__builtins__', '__name__', 'solution', 'torch']"
    assert lines[2] == "submission.py __main__"
    assert r.time_limit_s == 2 and 0 < r.cpu_s < r.time_limit_s + 2


@pytest.mark.parametrize("mode", sandbox_modes())
def test_traceback_names_solution_and_scratch_not_sandbox_paths(fixture_content, mode):
    r = run(RAISES_INSIDE, "import torch\nprint('before')\nsolution.add(torch.ones(2), torch.ones(2))\n",
            sandbox_mode=mode)
    assert r.status == "runtime_error" and r.message.startswith("IndexError: index 2 is out of bounds"), r
    assert r.stdout == "before\n"
    assert 'File "scratch.py", line 3, in <module>' in r.traceback
    assert 'File "solution.py", line 5, in add' in r.traceback
    assert "return x[len(x)]" in r.traceback and "solution.add(torch.ones(2)" in r.traceback  # source lines shown
    assert "submission.py" not in r.traceback and "/tmp" not in r.traceback
    assert "harness.py" not in r.traceback


def test_import_error_of_the_submission_names_solution(fixture_content):
    r = run("import torch\nVALUE = 1 / 0\n\ndef add(x, y):\n    return x + y\n", "print('never')\n")
    assert r.status == "runtime_error" and "raised while being imported" in r.message, r
    assert 'File "solution.py", line 2' in r.message and "submission.py" not in r.message
    assert "never" not in r.stdout


def test_invalid_submission_runs_no_snippet(fixture_content):
    r = run("def add(x, y)\n    return x\n", "print('never')\n")
    assert r.status == "invalid_submission" and "SyntaxError" in r.message, r
    assert r.stdout == ""
    r = run("def plus(x, y):\n    return x + y\n", "print('never')\n")
    assert r.status == "invalid_submission" and "missing entrypoint(s): add" in r.message, r


def test_snippet_syntax_error_points_at_scratch(fixture_content):
    r = run(CORRECT, "x = 1\nprint(x +)\n")
    assert r.status == "runtime_error" and r.message.startswith("SyntaxError"), r
    assert 'File "scratch.py", line 2' in r.traceback


@pytest.mark.parametrize("snippet,status", [
    ("while True:\n    pass\n", "time_limit"),
    ("import sys\nfor _ in range(100):\n    sys.stdout.write('x' * (1 << 20))\n", "output_limit"),
    ("hog = []\nwhile True:\n    hog.append(bytearray(64 << 20))\n", "memory_limit"),
])
def test_the_exercise_limits_hold(fixture_content, snippet, status):
    r = run(CORRECT, snippet)
    assert r.status == status, r
    assert not r.ok and "limit" in r.message


def test_no_grader_or_reference_takes_part(tmp_path, monkeypatch):
    """A scratch run needs neither: with both removed from the content it still runs."""
    content = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, content)
    (content / "graders" / "add_vectors.py").unlink()
    (content / "reference" / "add_vectors.py").unlink()
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(content))
    r = run(CORRECT, "print(solution.add(2, 3))\n")
    assert r.status == "ok" and r.stdout == "5\n", r
