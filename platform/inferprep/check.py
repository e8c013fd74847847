"""``inferprep check-exercise``: an exercise is only shippable if its grader has teeth.

Checks, in order: the metadata validates; every required file exists; the statement names every
entrypoint; the stub defines every entrypoint; a followups.toml, when present, validates
(``followups.validate``); the reference passes the hidden cases and the
public examples on CPU; the stub fails; every known-wrong variant in ``tests/wrong/<module>/``
fails (a whole ``.py`` file, or a ``.patch`` applied to the reference: ``inferprep.wrong_variants``;
a patch that no longer applies is a failed check naming it). (Otter Assign refuses an assignment whose solution fails; nbgrader requires an unanswered
exercise to fail; we also require the wrong variants to fail.)

Every grading here runs under one fixed salt (``CHECK_SALT`` unless told otherwise), so a check
is reproducible. The grader's randomness must come from that salt and from nothing the
submission controls: the reference is graded a second time with a harmless change to its text
(a comment and an unused name), everything the grader sends to the child is recorded in both
runs (case names in order, a digest of every call's frame and of the hosted objects' answers),
and the recordings must be identical. When they differ, a third run (the unchanged text, the
same salt) tells a grader that reads the submission's code apart from one that ignores the salt
(``os.urandom``, ``time``, an unseeded generator) and so cannot replay a grading.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import catalog
from .catalog import Exercise
from .mutate import mutate_exercise
from .runner import judge
from .runner.recording import WireRecorder, first_difference
from .verdict import CORE, INPUT_CHECKS, Verdict
from .wrong_variants import WrongVariant, target_of

CHECK_SALT = 0x5EED_CAFE_F00D
"""The salt every grading in a check runs under (``check-exercise --salt`` picks another)."""

SALT_FINDING = "hidden cases come from the salt, not the submission"


def harmless_change(code: str) -> str:
    """The same program with different text: a comment line before, a comment and an unused
    module-level name after."""
    return ("# check-exercise: the same program with different text\n" + code.rstrip("\n")
            + "\n\n# end of the changed copy\n_inferprep_check_unused = 1\n")


@dataclass
class Finding:
    what: str
    ok: bool
    detail: str = ""
    verdict: Verdict | None = None


@dataclass
class Report:
    slug: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.findings) and all(f.ok for f in self.findings)


def _defined_functions(source: str) -> set[str]:
    tree = ast.parse(source)
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))} | {
        t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}


def check_exercise(slug: str, *, device: str = "cpu", sandbox_mode: str | None = None,
                   on_finding: Callable[[Finding], None] | None = None, salt: int = CHECK_SALT,
                   mutate: bool = False) -> Report:
    """Run the checks of ``slug`` (see the module's docstring); ``mutate`` adds the mutation score
    (``inferprep.mutate``: at least ``SCORE_GOAL`` of the non-equivalent mutants detected, and a
    valid ``equivalent.toml``)."""
    report = Report(slug)

    def add(f: Finding) -> None:
        report.findings.append(f)
        if on_finding:
            on_finding(f)

    try:
        ex = catalog.get(slug)
    except catalog.CatalogError as e:
        add(Finding("metadata", False, str(e)))
        return report
    add(Finding("metadata", True, f"{ex.meta.title} ({ex.meta.track.value}, {ex.meta.kind.value})"))
    for label, path in (("reference", ex.reference_path), ("grader", ex.grader_path)):
        if not path.is_file():
            add(Finding(label, False, f"missing {path}"))
    if not ex.wrong_paths:
        add(Finding("wrong variants", False, f"no known-wrong solutions in tests/wrong/{ex.module}/"))
    missing = [e for e in ex.meta.entrypoints if e not in ex.statement]
    add(Finding("statement names every entrypoint", not missing, f"missing: {', '.join(missing)}" if missing else ""))
    try:
        stub_defs = _defined_functions(ex.stub)
        missing = [e for e in ex.meta.entrypoints if e not in stub_defs]
        add(Finding("stub defines every entrypoint", not missing, f"missing: {', '.join(missing)}" if missing else ""))
    except SyntaxError as e:
        add(Finding("stub parses", False, str(e)))
    for f in followup_findings(ex.folder, ex.reference_path):
        add(f)
    if not report.ok:
        return report

    def run(path: Path, public: bool = False, fail_fast: bool = False, code: str | None = None,
            recorder: WireRecorder | None = None) -> Verdict:
        return judge.grade(ex, path.read_text(encoding="utf-8") if code is None else code, device=device,
                           public=public, sandbox_mode=sandbox_mode, fail_fast=fail_fast, salt=salt,
                           recorder=recorder, perf=False)   # the perf stage is timed apart (gpu_check)

    first = WireRecorder()
    v = run(ex.reference_path, recorder=first)
    add(Finding("reference passes the hidden cases", v.ok, _summary(v), v))
    add(_salt_finding(run, ex.reference_path, first.finish()))
    v = run(ex.reference_path, public=True)
    add(Finding("reference passes the public examples", v.ok, _summary(v), v))
    # The stub and the wrong variants only need to fail: stop at their first failing case.
    v = run(ex.stub_path, fail_fast=True)
    add(Finding("stub fails", not v.ok and v.status.value != "internal_error", _summary(v), v))
    stems = [w.stem for w in ex.wrong_paths]
    for w in ex.wrong_paths:
        variant = WrongVariant(w, ex.reference_path)
        if stems.count(w.stem) > 1:
            add(Finding(f"wrong variant {w.name} is kept once", False,
                        f"{w.stem} is both a .py and a .patch; keep one"))
            continue
        try:
            code = variant.source()
        except ValueError as e:
            add(Finding(f"wrong variant {w.name} applies to the reference", False, str(e)))
            continue
        try:
            target = variant.target()
        except ValueError as e:
            add(Finding(f"wrong variant {w.name} declares its target", False, str(e)))
            continue
        v = run(w, fail_fast=target, code=code)
        if target == CORE:
            ok = not v.ok and v.status.value != "internal_error"
        else:
            ok = v.status.value != "internal_error" and any(not c.passed for c in v.cases if c.group == INPUT_CHECKS)
        add(Finding(f"wrong variant {w.name} fails {target}", ok, _summary(v), v))
    if mutate:
        m = mutate_exercise(ex, salt=salt, device=device, sandbox_mode=sandbox_mode)
        add(Finding("mutation score", m.ok, "; ".join([m.summary(), *m.errors])))
    return report


def followup_findings(folder: Path, reference_path: Path) -> list[Finding]:
    """The follow-up questions' finding (none when the exercise ships no followups.toml): the file
    parses and validates (``followups.validate``), and every number question's answer is what its
    ``reference_expr`` computes over the reference module."""
    from . import followups
    path = folder / followups.FILE_NAME
    if not path.is_file():
        return []
    problems = followups.validate(folder, reference_path)
    if problems:
        return [Finding("follow-up questions", False, "; ".join(problems))]
    qs = followups.parse(path)
    n_numbers = sum(isinstance(q, followups.NumberAnswer) for q in qs)
    return [Finding("follow-up questions", True, f"{len(qs)} questions, {n_numbers} number answer(s) "
                    "computed by the reference")]


def variant_target(source: str) -> str:
    """The group a known-wrong variant aims at, declared on its docstring's first line: one that
    says "(input checks)" (e.g. ``WRONG (input checks): flattens a 0-D input``) must fail an
    input-check case and may pass; any other must fail the algorithm (a core case), so a variant
    cannot quietly turn into a pass when cases are regrouped. Raises ValueError without a
    docstring (the header is where a variant says what mistake it makes)."""
    doc = (ast.get_docstring(ast.parse(source)) or "").strip()
    if not doc:
        raise ValueError("a known-wrong variant needs a docstring naming its mistake (and '(input checks)' "
                         "on its first line if it targets only the input checks)")
    return target_of(doc.splitlines()[0])


def _salt_finding(run, reference: Path, first: list) -> Finding:
    """Grade the reference again with a harmless change to its text (same salt) and compare what
    the grader sent; if they differ, a third run of the unchanged text tells which rule broke."""
    code = reference.read_text(encoding="utf-8")
    changed = WireRecorder()
    run(reference, code=harmless_change(code), recorder=changed)
    diff = first_difference(first, changed.finish())
    if diff is None:
        n_cases = sum(1 for kind, _ in first if kind == "case")
        n_calls = sum(1 for kind, _ in first if kind not in ("case", "replies"))
        return Finding(SALT_FINDING, True, f"{n_cases} cases and {n_calls} calls identical when the "
                       "reference's text changes")
    again = WireRecorder()
    run(reference, recorder=again)
    replay = first_difference(first, again.finish())
    if replay is None:
        return Finding(SALT_FINDING, False, "the grader derives what it sends from the submission's code "
                       "(the same salt, a harmless change to the reference's text): " + diff
                       + "; draw hidden data, case order and specimens' seeds from g.salt")
    return Finding(SALT_FINDING, False, "the grader does not replay from its salt (the same salt and the "
                   "same code twice): " + replay + "; draw every random choice from g.salt, not from "
                   "os.urandom, secrets, time or an unseeded generator")


def _summary(v: Verdict) -> str:
    first_fail = next((c for c in v.cases if not c.passed), None)
    s = f"{v.status.value} {v.passed}/{v.total} in {v.seconds:.1f}s"
    if v.message:
        s += f": {v.message.splitlines()[0][:160]}"
    elif first_fail is not None:
        s += f": {first_fail.name}: {first_fail.message.splitlines()[0][:160] if first_fail.message else ''}"
    return s


def check_exercise_dir_only(folder: Path) -> Exercise:
    """Validate just the folder (for `inferprep new` and for malformed-folder tests)."""
    return catalog.load_exercise_dir(folder)
