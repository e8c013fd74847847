"""Core vs input checks (issue 12): the status, score and passed/total are the core group's; input
checks are scored beside it; a known-wrong variant declares the group it targets."""

import pytest

from inferprep.check import variant_target
from inferprep.verdict import CORE, INPUT_CHECKS, CaseResult, Status, Verdict
from inferprep.web.render import split_rules, statement


def case(name, ok, group=CORE, status=None):
    return CaseResult(name=name, passed=ok, status=Status.PASSED if ok else (status or Status.WRONG_ANSWER), group=group)


def test_failing_input_checks_do_not_decide_the_status():
    v = Verdict.from_cases("x", [case("a", True), case("b", True), case("bad-n", False, INPUT_CHECKS),
                                 case("nan", True, INPUT_CHECKS)])
    assert v.status == Status.PASSED and v.ok
    assert (v.passed, v.total, v.score) == (2, 2, 1.0)
    assert (v.input_checks_passed, v.input_checks_total) == (1, 2)
    assert v.summary == "Passed; input checks 1/2"


def test_a_failing_core_case_decides_it():
    v = Verdict.from_cases("x", [case("a", True), case("b", False), case("bad-n", True, INPUT_CHECKS)])
    assert v.status == Status.WRONG_ANSWER and (v.passed, v.total) == (1, 2) and v.score == 0.5
    assert v.summary == "Wrong answer; 1/2 cases; input checks 1/1"


def test_a_grader_failure_in_an_input_check_is_still_an_internal_error():
    v = Verdict.from_cases("x", [case("a", True), case("n", False, INPUT_CHECKS, Status.INTERNAL_ERROR)])
    assert v.status == Status.INTERNAL_ERROR


def test_no_core_case_is_an_internal_error():
    assert Verdict.from_cases("x", [case("n", True, INPUT_CHECKS)]).status == Status.INTERNAL_ERROR


@pytest.mark.parametrize("doc,group", [
    ('"""WRONG: off by one."""', CORE),
    ('"""Known-wrong: p steps."""', CORE),
    ('"""WRONG (input checks): flattens a 0-D input."""', INPUT_CHECKS),
    ('"""Known-wrong (input checks): coerces n with int()."""\n', INPUT_CHECKS),
    ('"""WRONG: first line\n(input checks) on the second line does not count."""', CORE),
])
def test_variant_targets(doc, group):
    assert variant_target(doc + "\ndef f():\n    pass\n") == group


def test_a_variant_without_a_docstring_is_refused():
    with pytest.raises(ValueError):
        variant_target("def f():\n    pass\n")


STATEMENT = """## In short
Add two vectors.

## Exact rules
- `ValueError` when the shapes differ.

```text
## Exact rules inside a fence is text
```

## Examples
add([1], [2]) == [3]
"""


def test_the_exact_rules_are_folded_and_nothing_is_lost():
    before, rules, after = split_rules(STATEMENT)
    assert "In short" in before and "ValueError" in rules and "inside a fence" in rules
    assert after.startswith("## Examples")
    html = str(statement(STATEMENT))
    assert html.index("In short") < html.index('<details class="rules">') < html.index("ValueError") \
        < html.index("</details>") < html.index("Examples")


def test_a_statement_without_exact_rules_renders_as_before():
    assert split_rules("## In short\nx\n") == ("## In short\nx\n", None, "")


# -- through the judge, with a real child ----------------------------------------------------------
import shutil

from runner_support import FIXTURE_CONTENT
from inferprep import catalog
from inferprep.runner import judge

VALIDATING = """import torch
def add(x, y):
    if x.shape != y.shape or x.dim() != 1:
        raise ValueError("x and y must be 1-D tensors of one length")
    return x + y
"""
NO_CHECKS = "def add(x, y):\n    return x + y\n"
DIES_ON_BAD_INPUT = "import os\ndef add(x, y):\n    if x.shape != y.shape:\n        os._exit(3)\n    return x + y\n"
WRONG_ALGORITHM = VALIDATING.replace("x + y", "x - y")


@pytest.fixture
def grouped(tmp_path, monkeypatch):
    root = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, root)
    shutil.copy(FIXTURE_CONTENT.parent / "group_graders" / "with_input_checks.py", root / "graders" / "add_vectors.py")
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    return catalog.get("add-vectors")


@pytest.mark.parametrize("code,status,checks", [
    (VALIDATING, "passed", (2, 2)),
    (NO_CHECKS, "passed", (0, 2)),           # the algorithm is right: a pass, input checks 0/2
    (DIES_ON_BAD_INPUT, "passed", (0, 2)),   # a death inside an input check decides nothing
    (WRONG_ALGORITHM, "wrong_answer", (2, 2)),
])
def test_the_judge_decides_on_core_cases(grouped, code, status, checks):
    v = judge.grade(grouped, code)
    assert v.status.value == status, (v.status, v.message, [(c.name, c.message[:100]) for c in v.cases])
    assert (v.input_checks_passed, v.input_checks_total) == checks
    assert v.total == 3
