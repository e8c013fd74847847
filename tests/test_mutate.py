"""Mutation testing of graders (issue 20): operators make the expected mutants, the engine
classifies a fixture exercise whose survivors are known, ``equivalent.toml`` is validated, the
CLI refuses bad arguments, and a CI sample runs over a few real exercises."""

import ast
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferprep import catalog
from inferprep.check import check_exercise
from inferprep.cli import app as cli
from inferprep.mutate import MUTATE_SALT, OPERATORS, Result, classify, generate, mutate_exercise
from inferprep.mutate import equivalent
from inferprep.mutate.engine import time_limit
from inferprep.mutate.report import markdown
from inferprep.verdict import CORE, INPUT_CHECKS, CaseResult, Status, Verdict

ROOT = Path(__file__).resolve().parent.parent
MUTATE_CONTENT = ROOT / "tests" / "fixtures" / "mutate_content"


def changed(source: str, operator: str) -> list[str]:
    """Each mutant of ``operator`` as its changed line(s), stripped."""
    out = []
    for m in generate(textwrap.dedent(source), [operator]):
        a, b = textwrap.dedent(source).splitlines(), m.code.splitlines()
        out.append(" / ".join(y.strip() for x, y in zip(a, b) if x != y) if len(a) == len(b) else m.code)
    return out


OPERATOR_CASES = [
    ("compare", "ok = a < b <= c != d\n", ["ok = a <= b <= c != d", "ok = a < b < c != d", "ok = a < b <= c == d"]),
    ("constant", "x = y[3] + True\n", ["x = y[4] + True", "x = y[2] + True"]),
    ("constant", "n = 0\n", ["n = 1"]),
    ("index", "v = x[i] + x[j:k] + x[i - 1]\n",
     ["v = x[i + 1] + x[j:k] + x[i - 1]", "v = x[i - 1] + x[j:k] + x[i - 1]", "v = x[i] + x[j + 1:k] + x[i - 1]",
      "v = x[i] + x[j - 1:k] + x[i - 1]", "v = x[i] + x[j:k + 1] + x[i - 1]", "v = x[i] + x[j:k - 1] + x[i - 1]"]),
    ("range-bound", "for i in range(a, n): pass\n", ["for i in range(a + 1, n): pass", "for i in range(a - 1, n): pass",
                                                     "for i in range(a, n + 1): pass", "for i in range(a, n - 1): pass"]),
    ("swap-args", "y = f(a, b, a) + max(a, b)\n", ["y = f(b, a, a) + max(a, b)", "y = f(a, a, b) + max(a, b)"]),
    ("drop-term", "y = a + b - c\n", ["y = b - c", "y = a - c", "y = a + b"]),
    ("drop-factor", "y = 2 * n / d\n", ["y = n / d", "y = 2 / d", "y = 2 * n"]),
    ("arith", "y = a + b * c\n", ["y = a - b * c", "y = a + b / c"]),
    ("augassign", "total += x  # keep\n", ["total = x  # keep"]),
    ("dtype", "t = x.to(torch.float64).double(); u = torch.float8_e4m3fn\n",
     ["t = x.to(torch.float32).double(); u = torch.float8_e4m3fn", "t = x.to(torch.float64).float(); u = torch.float8_e4m3fn",
      "t = x.to(torch.float64).double(); u = torch.float8_e5m2"]),
    ("rounding", "y = math.ceil(a / b) + round(c) + a // b + t.floor()\n",
     ["y = math.floor(a / b) + round(c) + a // b + t.floor()", "y = math.ceil(a // b) + round(c) + a // b + t.floor()",
      "y = math.ceil(a / b) + int(c) + a // b + t.floor()", "y = math.ceil(a / b) + round(c) + a / b + t.floor()",
      "y = math.ceil(a / b) + round(c) + a // b + t.ceil()"]),
    ("remove-raise", "if n < 0:\n    raise ValueError(f'n={n - 1}')\n", ["pass"]),
    ("in-place", "x.add_(1)\ny = z.clone()\n", ["x.add(1)", "y = z"]),
    ("reversed", "for v in xs:\n    out.append(v)\nys = sorted(reversed(zs), reverse=True)[::-1]\n",
     ["for v in reversed(xs):", "ys = sorted(zs, reverse=True)[::-1]", "ys = sorted(reversed(zs), reverse=False)[::-1]",
      "ys = sorted(reversed(zs), reverse=True)"]),
    ("reversed", "for _ in xs:\n    f()\nfor k in ks:\n    check(k)\n    if k < 0:\n        raise ValueError(k.item())\n"
                 "s = sum(x for x in xs) + max(x for x in xs)\n"
                 "t = [x for x in xs] + max((x for x in xs), key=f) + {x: 1 for x in xs}\n",
     ["t = [x for x in reversed(xs)] + max((x for x in xs), key=f) + {x: 1 for x in xs}",
      "t = [x for x in xs] + max((x for x in reversed(xs)), key=f) + {x: 1 for x in xs}"]),
    ("min-max", "y = min(a, b) + t.amax(-1) + t.clamp(min=0)\n",
     ["y = max(a, b) + t.amax(-1) + t.clamp(min=0)", "y = min(a, b) + t.amin(-1) + t.clamp(min=0)",
      "y = min(a, b) + t.amax(-1) + t.clamp(max=0)"]),
    ("boolean", "ok = a and not b\n", ["ok = a or not b", "ok = a and b"]),
    ("break-continue", "for i in x:\n    break\n", ["continue"]),
    ("tril-triu", "m = torch.ones(3, 3).tril()\n", ["m = torch.ones(3, 3).triu()"]),
]


@pytest.mark.parametrize("operator,source,expected", OPERATOR_CASES)
def test_each_operator_makes_the_expected_mutants(operator, source, expected):
    assert changed(source, operator) == expected


def test_every_operator_has_a_case():
    assert {case[0] for case in OPERATOR_CASES} == set(OPERATORS)


def test_messages_annotations_docstrings_and_asserts_are_not_mutated():
    src = textwrap.dedent('''\
        """Module doc 1 < 2."""
        def f(n: int = 3) -> list[int]:
            """Doc 4 + 5."""
            assert n > 1, f"n={n + 1}"
            if n < 0:
                raise ValueError(f"bad {n + 1}")
            print(n + 1)
            return n
        if __name__ == "__main__":
            f(1 + 2)
        ''')
    lines = {m.line for m in generate(src)}
    assert lines == {2, 5, 6}, [m.id for m in generate(src)]  # default 3, `n < 0`, the raise itself
    assert {m.operator for m in generate(src) if m.line == 6} == {"remove-raise"}


def test_only_code_the_entrypoints_reach_is_mutated():
    src = textwrap.dedent('''\
        SCALE = 2
        TABLE = {"a": 3}
        def _helper(x):
            return x * SCALE
        def entry(x):
            return _helper(x) + 1
        def editorial_only(x):
            return TABLE["a"] + x
        if entry(4) < 0:
            raise SystemExit(1)
        ''')
    reached = {m.line for m in generate(src, entrypoints=["entry"])}
    assert reached == {1, 4, 6, 9, 10}, reached      # SCALE, _helper, entry, module-level code
    assert {m.line for m in generate(src)} == {1, 2, 4, 6, 8, 9, 10}


def test_mutants_keep_comments_and_parse_to_one_change():
    src = "def f(a, b):  # sum\n    return (a  +  b)  # note\n"
    for m in generate(src):
        assert "# sum" in m.code and "# note" in m.code
        ast.parse(m.code)
    assert [m.code.splitlines()[1] for m in generate(src, ["arith"])] == ["    return (a  -  b)  # note"]


def test_order_ids_and_stable_keys():
    src = "def f(x):\n    if x < 1:\n        return x + 1\n    return x < 1\n"
    ms = generate(src)
    assert [m.id for m in ms] == [m.id for m in generate(src)]
    assert [(m.line, m.col) for m in ms] == sorted((m.line, m.col) for m in ms)
    assert len({m.id for m in ms}) == len(ms) and len({m.key for m in ms}) == len(ms)
    first = next(m for m in ms if m.operator == "compare")
    assert first.id == "compare@2:9#0" and first.key == ("compare", "if x < 1:", 0)
    # An unrelated edit above shifts line numbers, not keys.
    shifted = generate("import math\n\n" + src)
    assert [m.key for m in shifted] == [m.key for m in ms]
    assert [m.line for m in shifted] == [m.line + 2 for m in ms]


def test_unknown_operator_is_refused():
    with pytest.raises(ValueError, match="unknown mutation operator.*nope"):
        generate("x = 1\n", ["compare", "nope"])


def test_the_diff_shows_the_change():
    m = generate("a = 1\nb = a < 2\n", ["compare"])[0]
    d = m.diff("a = 1\nb = a < 2\n", "reference/x.py")
    assert "-b = a < 2\n+b = a <= 2\n" in d and "reference/x.py (compare@2:6#0)" in d


# -- equivalent.toml ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text,problem", [
    ("[[mutant]\n", "not valid TOML"),
    ('[[mutant]]\noperator = "compare"\nline = "x"\nreason = "r"\nwhy = 1\n', "unknown key(s) why"),
    ('[[mutant]]\noperator = "compare"\nline = "x"\n', "`reason` must be one line"),
    ('[[mutant]]\noperator = "compare"\nline = "x"\nreason = """two\nlines"""\n', "`reason` must be one line"),
    ('[[mutant]]\noperator = "flip"\nline = "x"\nreason = "r"\n', "operator 'flip' is not one of"),
    ('[[mutant]]\noperator = "compare"\nline = "x"\nreason = "r"\noccurrence = -1\n', "`occurrence` must be an int"),
    ('[[mutant]]\noperator = "compare"\nline = "x"\nreason = "r"\n' * 2, "entry 2: compare on `x` (occurrence 0) is listed twice"),
    ('mutant = 3\n', "array of tables"),
])
def test_malformed_equivalent_toml_is_an_error(tmp_path, text, problem):
    p = tmp_path / "equivalent.toml"
    p.write_text(text)
    with pytest.raises(equivalent.EquivalentFileError) as e:
        equivalent.load(p)
    assert problem in str(e.value) and str(p) in str(e.value)


def test_an_entry_that_matches_no_mutant_is_an_error(tmp_path):
    p = tmp_path / "equivalent.toml"
    p.write_text('[[mutant]]\noperator = "compare"\nline = "if x < 1:"\nreason = "r"\n'
                 '[[mutant]]\noperator = "compare"\nline = "if x < 2:"\noccurrence = 0\nreason = "gone"\n')
    entries = equivalent.load(p)
    matched, errors = equivalent.match(entries, generate("if x < 1:\n    pass\n"))
    assert list(matched) == [("compare", "if x < 1:", 0)]
    assert len(errors) == 1 and "`if x < 2:`" in errors[0] and "matches no mutant" in errors[0]
    assert equivalent.load(tmp_path / "absent.toml") == []


# -- classification ---------------------------------------------------------------------------------

def _verdict(*cases, run_status=None):
    return Verdict.from_cases("x", [CaseResult(name=n, passed=ok, group=g, status=s if not ok else Status.PASSED)
                                    for n, ok, g, s in cases], run_status=run_status)


@pytest.mark.parametrize("cases,run_status,result", [
    ([("a", False, CORE, Status.WRONG_ANSWER)], None, Result.KILLED),
    ([("a", False, CORE, Status.RUNTIME_ERROR)], None, Result.KILLED),
    ([("a", True, CORE, None), ("n", False, INPUT_CHECKS, Status.WRONG_ANSWER)], None, Result.INPUT_CHECKS),
    ([("a", False, CORE, Status.TIME_LIMIT)], Status.TIME_LIMIT, Result.TIMED_OUT),
    ([("a", False, CORE, Status.INTERNAL_ERROR)], None, Result.GRADER_ERROR),
    ([("a", True, CORE, None), ("n", True, INPUT_CHECKS, None)], None, Result.SURVIVED),
])
def test_classify(cases, run_status, result):
    assert classify(_verdict(*cases, run_status=run_status))[0] is result


def test_time_limit_is_a_multiple_of_the_reference_time_within_the_exercise_limit(monkeypatch):
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(MUTATE_CONTENT))
    ex = catalog.get("running-total")  # time_s = 2
    assert time_limit(ex, 0.01) == 1
    assert time_limit(ex, 0.7) == 2
    assert time_limit(ex, 5.0) == 2


# -- the fixture exercise: which mutants survive is known -------------------------------------------

EXPECTED = {
    ("compare", "if n < 0:", 0): Result.SURVIVED,          # n == 0 is never tried
    ("constant", "if n < 0:", 0): Result.SURVIVED,
    ("remove-raise", 'raise ValueError("n must be >= 0")', 0): Result.INPUT_CHECKS,
    ("reversed", "for i in range(n):", 0): Result.EQUIVALENT,  # listed, and the differential check agrees
    ("augassign", "done += step", 0): Result.TIMED_OUT,     # done = step never reaches 10
}


@pytest.fixture(scope="module")
def fixture_run():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("INFERPREP_CONTENT_ROOT", str(MUTATE_CONTENT))
        ex = catalog.get("running-total")
        return ex, mutate_exercise(ex, jobs=2, n_differential=4)


def test_the_fixture_mutants_are_classified(fixture_run):
    _, run = fixture_run
    got = {o.mutant.key: o.result for o in run.outcomes}
    assert len(got) == 17 and not run.errors, run.errors
    for key, result in EXPECTED.items():
        assert got.pop(key) is result, key
    assert set(got.values()) == {Result.KILLED}
    assert (run.count(Result.KILLED), run.non_equivalent) == (12, 16)
    assert run.score == pytest.approx(14 / 16) and not run.ok
    assert 0 < run.reference_seconds and run.time_limit_s == time_limit(fixture_run[0], run.reference_seconds)


def test_the_report_lists_scores_and_survivor_diffs(fixture_run):
    _, run = fixture_run
    md = markdown([run], command="inferprep mutate running-total", seconds=12.0, salt=1, jobs=2, root=ROOT)
    assert "**Overall: 87.5%** of 16 non-equivalent mutants detected (14)" in md
    assert f"| `running-total` | 17 | 12 | 1 | 1 | 2 | 1 | 0 | 87.5% | 4 | 0/7 | {run.seconds:.0f} |" in md
    assert "Of the 1 equivalents, 0 can be noticed only by salt-blind cases" in md
    assert "| `remove-raise` | 1 | 0 | 1 | 0 | 0 | 0 | 0 | 100.0% |" in md
    assert "-    if n < 0:\n+    if n <= 0:" in md and "-    if n < 0:\n+    if n < 1:" in md
    assert "at commit " in md and "Why our own generator" in md


def test_a_wrong_equivalent_entry_is_an_error(tmp_path, monkeypatch):
    import shutil
    root = tmp_path / "content"
    shutil.copytree(MUTATE_CONTENT, root)
    (root / "tests/wrong/running_total/equivalent.toml").write_text(
        '[[mutant]]\noperator = "constant"\nline = "total = 0"\nreason = "wrong: the sum starts at 1"\n'
        '[[mutant]]\noperator = "constant"\nline = "total = 00"\nreason = "no such line"\n')
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    run = mutate_exercise(catalog.get("running-total"), operators=["constant"], n_differential=2)
    assert len(run.errors) == 2, run.errors
    assert "`total = 00`" in run.errors[0] and "matches no mutant" in run.errors[0]
    assert "`total = 0` (occurrence 0) is listed as equivalent, but constant@9:12#0 is not" in run.errors[1]


def test_check_exercise_reports_the_mutation_score(monkeypatch):
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(MUTATE_CONTENT))
    report = check_exercise("running-total", mutate=True)
    finding = report.findings[-1]
    assert finding.what == "mutation score" and not finding.ok
    assert finding.detail.startswith("87.5% of 16 non-equivalent mutants detected")
    assert all(f.ok for f in report.findings[:-1]), [f for f in report.findings if not f.ok]


# -- the command line -----------------------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    ([], "give SLUG ... or --all"),
    (["rope", "--all"], "give SLUG ... or --all"),
    (["rope", "--operators", "compare,flip"], "unknown operator"),
    (["rope", "--operators", ","], "unknown operator"),
    (["no-such-exercise"], "no exercise 'no-such-exercise'"),
])
def test_cli_refuses_bad_arguments(args, message):
    r = CliRunner().invoke(cli, ["mutate", *args])
    assert r.exit_code == 2 and message in " ".join(r.output.split()), r.output


def test_cli_refuses_zero_jobs():
    r = CliRunner().invoke(cli, ["mutate", "rope", "--jobs", "0"])
    assert r.exit_code == 2 and "--jobs" in r.output


def test_cli_runs_the_fixture_and_writes_the_report(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(MUTATE_CONTENT))
    report = tmp_path / "strength.md"
    r = CliRunner().invoke(cli, ["mutate", "running-total", "--operators", "compare,remove-raise",
                                 "--report", str(report)])
    assert r.exit_code == 0, r.output
    assert "survivor compare@7:9#0" in r.output and "+    if n <= 0:" in r.output
    assert "| `running-total` | 3 | 1 | 1 | 0 | 1 | 0 | 0 | 66.7% | " in report.read_text()


# -- the CI sample: a few real calculate exercises, a bounded number of mutants each ---------------

SAMPLE = ("ridge-point", "kv-per-gpu-tp", "gpu-generation-speedup")


@pytest.mark.parametrize("slug", SAMPLE)
def test_sample_of_real_graders(slug):
    ex = catalog.get(slug)
    run = mutate_exercise(ex, max_mutants=20, jobs=1)
    assert not run.errors, run.errors
    assert len(run.outcomes) == 20 and run.generated > 20
    assert not [o for o in run.outcomes if o.result in (Result.GRADER_ERROR, Result.INVALID)], \
        [(o.mutant.id, o.detail) for o in run.outcomes if o.result in (Result.GRADER_ERROR, Result.INVALID)]
    assert run.count(Result.KILLED) > 0


def test_a_confirmed_equivalent_skips_its_extra_salts_until_a_text_changes(tmp_path, monkeypatch):
    """The cache of confirmed equivalents: the second run grades the listed mutant under the run's
    salt only; a changed grader (a new key) runs the differential check again."""
    import shutil

    from inferprep.mutate.engine import ConfirmedEquivalents
    from inferprep.runner import judge

    root = tmp_path / "content"
    shutil.copytree(MUTATE_CONTENT, root)
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    salts_seen: list[int] = []
    real = judge.grade

    def counting(*a, salt=None, **kw):
        salts_seen.append(salt)
        return real(*a, salt=salt, **kw)

    monkeypatch.setattr(judge, "grade", counting)
    cache_file = tmp_path / "confirmed.json"
    ex = catalog.get("running-total")

    def reversed_run():
        salts_seen.clear()
        run = mutate_exercise(ex, operators=["reversed"], n_differential=3,
                              confirmed=ConfirmedEquivalents(cache_file))
        assert [o.result for o in run.outcomes] == [Result.EQUIVALENT] and not run.errors, run.errors
        return len(salts_seen)

    first = reversed_run()          # the reference twice, the mutant once, then 3 extra salts
    assert first == 2 + 1 + 3 and cache_file.is_file()
    assert reversed_run() == 2 + 1   # confirmed earlier: no extra salts
    grader = root / "graders" / "running_total.py"
    grader.write_text(grader.read_text() + "\n# a changed grader\n")
    assert reversed_run() == first   # a new key: checked again
    assert ConfirmedEquivalents(tmp_path / "absent.json").save() is None   # a missing file is an empty cache
    (tmp_path / "bad.json").write_text("{not json")
    assert not ConfirmedEquivalents(tmp_path / "bad.json").covers("x", 1)
    (tmp_path / "old.json").write_text('["a key of the older list format"]')
    assert not ConfirmedEquivalents(tmp_path / "old.json").covers("a key of the older list format", 1)
    more = ConfirmedEquivalents(None)
    more.add("k", 4)
    assert more.covers("k", 4) and more.covers("k", 2) and not more.covers("k", 5)   # fewer salts checked: again


def test_the_differential_check_gets_fewer_salts_for_a_slow_reference():
    from inferprep.mutate.engine import (DIFFERENTIAL_BUDGET_S, DIFFERENTIAL_SALTS, MIN_DIFFERENTIAL_SALTS,
                                         differential_count)
    assert differential_count(0.05) == DIFFERENTIAL_SALTS
    assert differential_count(DIFFERENTIAL_BUDGET_S / 6) == 6
    assert differential_count(60.0) == MIN_DIFFERENTIAL_SALTS


# -- case selection: a mutant graded first on the cases that can notice it ---------------------------

REACH_SOURCE = '''
import math
SCALE = 2.0


def helper(x):
    return x * SCALE


def only_b(x):
    return -x


def a(x):
    return helper(x)


def b(x):
    return only_b(x) + helper(x)


def loaded_at_import():
    return 1


TABLE = [loaded_at_import()]
assert math.isfinite(SCALE)


def unused():
    return 0


if __name__ == "__main__":
    print(unused())
'''


def test_reach_follows_the_names_each_entrypoint_uses():
    from inferprep.mutate.selection import Reach
    r = Reach(REACH_SOURCE, ["a", "b"])
    line = {text.split("(")[0].removeprefix("def "): n for n, text in enumerate(REACH_SOURCE.splitlines(), 1)
            if text.startswith("def ")}
    assert r.entrypoints_for(line["helper"] + 1) == {"a", "b"}
    assert r.entrypoints_for(line["only_b"] + 1) == {"b"}
    assert r.entrypoints_for(line["a"]) == {"a"}
    assert r.entrypoints_for(line["unused"] + 1) == frozenset()            # only the main guard uses it
    assert r.entrypoints_for(3) is None                                    # SCALE: read by code run at import
    assert r.entrypoints_for(line["loaded_at_import"] + 1) == frozenset()  # feeds TABLE, which no entrypoint reads
    assert r.entrypoints_for(REACH_SOURCE.count("\n") + 5) is None         # past the end: every case


def test_a_case_selection_records_calls_and_leaves_out_other_cases(monkeypatch):
    from inferprep.grading import CaseSelection
    from inferprep.runner import judge
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(MUTATE_CONTENT))
    ex = catalog.get("running-total")
    code = ex.reference_path.read_text()
    seen = CaseSelection()
    whole = judge.grade(ex, code, salt=1, cases=seen)
    assert whole.ok and len(whole.cases) == 7
    assert seen.calls == {"running-total-2": {"running_total"}, "running-total-5": {"running_total"},
                          "running-total-8": {"running_total"}, "ceil-steps-10-3": {"ceil_steps"},
                          "ceil-steps-12-4": {"ceil_steps"}, "ceil-steps-1-5": {"ceil_steps"},
                          "rejects-negative-n": {"running_total"}}
    only = judge.grade(ex, code, salt=1, cases=CaseSelection(frozenset({"ceil-steps-1-5", "rejects-negative-n"})))
    assert [c.name for c in only.cases] == ["ceil-steps-1-5", "rejects-negative-n"] and only.ok
    skipped = judge.grade(ex, code, salt=1, cases=CaseSelection(skip=frozenset({"running-total-2", "no-such-case"})))
    assert [c.name for c in skipped.cases] == [c.name for c in whole.cases][1:] and skipped.ok
    wrong = code.replace("steps += 1", "steps += 2")
    left_out = judge.grade(ex, wrong, salt=1, cases=CaseSelection(frozenset({"running-total-2"})))
    assert left_out.ok and [c.name for c in left_out.cases] == ["running-total-2"]   # its mistake is not run


def test_selected_and_exact_runs_classify_every_mutant_alike(monkeypatch, fixture_run):
    from inferprep.mutate import selection
    monkeypatch.setattr(selection, "WORTH", 0.0)   # the fixture's cases are all cheap: select anyway
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(MUTATE_CONTENT))
    ex, exact = fixture_run
    run = mutate_exercise(ex, jobs=2, n_differential=2)
    assert {o.mutant.key: o.result for o in run.outcomes} == {o.mutant.key: o.result for o in exact.outcomes}
    # every mutant of running_total / ceil_steps has its own cases; the two survivors (and the listed
    # equivalent) passed theirs and were graded again on every case
    assert run.selected == 17 and run.regraded == 3 and run.distrusted == 0


def test_a_selection_the_reference_fails_is_not_used():
    from inferprep.mutate.selection import Planner, Reach
    from inferprep.mutate.mutants import generate
    source = "def a(x):\n    return x + 1\n\n\ndef b(x):\n    return x - 1\n"
    asked: list[frozenset] = []

    def trust(cases):
        asked.append(cases)
        return cases != {"b-case"}

    p = Planner(Reach(source, ["a", "b"]), {"a-case": {"a"}, "b-case": {"b"}}, {"a-case": 1.0, "b-case": 1.0}, trust)
    by_fn = {m.line: m for m in generate(source)}
    assert p.cases_for(by_fn[2]) == {"a-case"}
    assert p.cases_for(by_fn[6]) is None and p.distrusted == 1   # the reference failed it: graded whole
    assert p.cases_for(by_fn[6]) is None and len(asked) == 2     # asked once per selection


def test_the_extra_salts_grade_a_listed_mutant_on_its_own_cases(monkeypatch, fixture_run):
    from inferprep.mutate import selection
    from inferprep.runner import judge
    monkeypatch.setattr(selection, "WORTH", 0.0)
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(MUTATE_CONTENT))
    ex, _ = fixture_run
    real, seen = judge.grade, []

    def recording(*a, **kw):
        seen.append((kw.get("salt"), kw.get("cases")))
        return real(*a, **kw)

    monkeypatch.setattr(judge, "grade", recording)
    run = mutate_exercise(ex, jobs=1, n_differential=2, only={"reversed@10:14#0"})
    assert [o.result for o in run.outcomes] == [Result.EQUIVALENT], run.outcomes
    extra = [cases for salt, cases in seen if salt != MUTATE_SALT]
    # its own cases, the others left out by exclusion (a case named only under another salt runs)
    assert len(extra) == 2 and all(c is not None and c.only is None and c.skip == {
        "ceil-steps-10-3", "ceil-steps-12-4", "ceil-steps-1-5"} for c in extra), extra
    # under the run's salt it was graded on its cases, then whole (a survivor is a survivor of the whole grader)
    assert [c.only is None and not c.skip for s, c in seen[-4:-2]] == [False, True]
    assert set(run.phase_seconds) == {"reference", "trust", "mutants", "regrade", "differential"}
    assert all(run.phase_seconds[p] > 0 for p in ("reference", "trust", "mutants", "regrade", "differential"))


def test_cli_regrades_only_the_mutants_asked_for(monkeypatch):
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(MUTATE_CONTENT))
    r = CliRunner().invoke(cli, ["mutate", "running-total", "--mutant", "compare@7:9#0", "--mutant", "augassign@18:13#0"])
    assert r.exit_code == 0, r.output
    assert "running-total: 50.0% of 2 non-equivalent mutants detected (1 timed out, 1 survived)" in " ".join(r.output.split())
    for args, message in ([["running-total", "--mutant", "compare@99:1#0"], "no mutant compare@99:1#0 of running-total"],
                          [["--all", "--mutant", "compare@7:9#0"], "--mutant needs exactly one SLUG"]):
        r = CliRunner().invoke(cli, ["mutate", *args])
        assert r.exit_code == 2 and message in " ".join(r.output.split()), r.output


SALT_READ = "    rnd = random.Random(g.salt)   # every case below depends on the salt\n"


@pytest.mark.parametrize("where, blind, extra_cases", [
    # the salt is never read: every case is the same under every salt, the extra salts are skipped
    ("never", 7, None),
    # first read after the first case: some of the listed mutant's own cases depend on the salt, so
    # it is graded on all of them under each extra salt (the others left out by exclusion)
    ("after the first case", 1, {"ceil-steps-10-3", "ceil-steps-12-4", "ceil-steps-1-5"}),
])
def test_the_extra_salts_are_skipped_when_only_salt_blind_cases_can_notice_a_mutant(tmp_path, monkeypatch, where, blind,
                                                                             extra_cases):
    import shutil

    from inferprep.mutate import selection
    from inferprep.runner import judge
    monkeypatch.setattr(selection, "WORTH", 0.0)
    root = tmp_path / "content"
    shutil.copytree(MUTATE_CONTENT, root)
    grader = root / "graders" / "running_total.py"
    text = grader.read_text()
    assert SALT_READ in text
    text = text.replace(SALT_READ, "    rnd = random.Random(0)\n")
    if where == "after the first case":
        line = "        xs = [rnd.randrange(-9, 10) for _ in XS]\n"
        assert line in text
        text = text.replace(line, line + "        if n == 5:\n            g.salt\n")
    grader.write_text(text)
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    real, seen = judge.grade, []

    def recording(*a, **kw):
        seen.append((kw.get("salt"), kw.get("cases")))
        return real(*a, **kw)

    monkeypatch.setattr(judge, "grade", recording)
    run = mutate_exercise(catalog.get("running-total"), jobs=1, n_differential=2, only={"reversed@10:14#0"})
    assert [o.result for o in run.outcomes] == [Result.EQUIVALENT] and not run.errors, (run.outcomes, run.errors)
    assert (run.cases, run.salt_blind_cases) == (7, blind)
    extra = [cases for salt, cases in seen if salt != MUTATE_SALT]
    if extra_cases is None:
        assert extra == [] and run.salt_blind_equivalents == 1
    else:
        assert len(extra) == 2 and run.salt_blind_equivalents == 0
        assert all(c.only is None and c.skip == extra_cases for c in extra), extra


def test_a_grading_notes_which_cases_ended_after_its_first_salt_read(monkeypatch):
    from inferprep.grading import CaseSelection
    from inferprep.runner import judge
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(MUTATE_CONTENT))
    ex = catalog.get("running-total")
    seen = CaseSelection()
    assert judge.grade(ex, ex.reference_path.read_text(), salt=1, cases=seen).ok
    assert len(seen.salted) == 7   # the fixture's grader reads its salt before the first case


PLAIN_CEIL_STEPS = """def ceil_steps(total: int, step: int) -> int:
    done, steps = 0, 0
"""
MEMO_CEIL_STEPS = """_MEMO: dict[int, int] = {}


def ceil_steps(total: int, step: int) -> int:
    key = total * 100 + step
    if key in _MEMO:
        return _MEMO[key]
    done, steps = 0, 0
"""


def memo_reference() -> str:
    """The fixture's reference with ceil_steps memoised in a module-level table."""
    text = (MUTATE_CONTENT / "reference" / "running_total.py").read_text()
    assert PLAIN_CEIL_STEPS in text and text.rstrip().endswith("    return steps")
    text = text.replace(PLAIN_CEIL_STEPS, MEMO_CEIL_STEPS)
    return text.rstrip()[:-len("    return steps")] + "    _MEMO[key] = steps\n    return steps\n"

LATE_SALT_GRADER = '''import random

from inferprep.grading import INPUT_CHECKS, Grading, expect_equal

XS = [3, 1, 4, 1, 5, 9, 2, 6]


def grade(g: Grading) -> None:
    ref = g.reference()
    for n in (2, 5, 8):
        with g.case(f"running-total-{n}"):
            expect_equal(g.call("running_total", XS, n), ref.running_total(XS, n))
    for total, step in ((12, 4), (13, 5), (1, 5)):          # fixed data: salt-blind cases
        with g.case(f"ceil-steps-{total}-{step}"):
            expect_equal(g.call("ceil_steps", total, step), ref.ceil_steps(total, step))
    rnd = random.Random(g.salt)                              # the first read of the salt
    total, step = rnd.randrange(8, 14), rnd.randrange(1, 6)
    with g.case("ceil-steps-salted"):
        expect_equal(g.call("ceil_steps", total, step), ref.ceil_steps(total, step))
    with g.case("rejects-negative-n", group=INPUT_CHECKS):
        g.raises("ValueError", "running_total", XS, -1)
'''


def test_a_salt_blind_case_that_leaves_state_for_a_salted_one_is_graded_under_the_extra_salts(tmp_path, monkeypatch):
    """Found by a red-team review: the salt-blind cases leave state behind (here a memo table in the
    submission's module) that a salted case then meets. A wrong mutant of the memo key passes under
    the run's salt and is refuted only when the blind cases run under the extra salts too."""
    import shutil
    root = tmp_path / "content"
    shutil.copytree(MUTATE_CONTENT, root)
    memo = memo_reference()
    (root / "reference" / "running_total.py").write_text(memo)
    (root / "graders" / "running_total.py").write_text(LATE_SALT_GRADER)
    (root / "tests/wrong/running_total/equivalent.toml").write_text(
        '[[mutant]]\noperator = "drop-term"\nline = "key = total * 100 + step"\noccurrence = 1\n'
        'reason = "wrong on purpose: the memo key needs the step too"\n')
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    ex = catalog.get("running-total")
    wrong = [m for m in generate(memo, None, ex.meta.entrypoints)
             if m.operator == "drop-term" and "key = total * 100\n" in m.code]
    assert len(wrong) == 1
    run = mutate_exercise(ex, jobs=1, n_differential=4, only={wrong[0].id})
    assert [o.result for o in run.outcomes] == [Result.KILLED], run.outcomes
    assert "refuted by salt" in run.outcomes[0].detail and run.salt_blind_cases == 6
    assert any("is listed as equivalent" in e for e in run.errors)
