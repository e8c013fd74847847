"""Which hidden cases can detect a mutant: a speed-up of ``inferprep mutate``.

A mutant changes one top-level statement of the reference. A hidden case can only notice the
change if it calls an entrypoint whose code reaches that statement through the names it uses
(as ``mutants.unreachable`` follows them); every other case runs the unchanged code. So each
mutant is first graded on its own cases alone (``grading.CaseSelection``), and a failure there is
a real failure of a real hidden case. A mutant that passes them is graded again on every case, so
that a survivor is always a survivor of the whole grader (state one case leaves for another, a
function reached through ``globals()``, import-time side effects).

A selection is trusted only after the reference passes it: a grader whose later cases depend on
the work of an earlier one fails the reference there, and its mutants are graded whole.

Where a grader draws its data from one generator across cases, a left-out case's draws after its
first call are not made, and later cases see other (equally valid) data than a whole grading
under the same salt: a mutant may then be killed by data another salt would give. ``inferprep
mutate --exact`` grades every mutant on every case.
"""

from __future__ import annotations

import ast
import threading
from typing import Callable, Iterable

from .mutants import Mutant, _defined_names, _is_main_guard

__all__ = ["Reach", "Planner"]


class Reach:
    """For each top-level statement of a reference: the entrypoints whose code reaches it.

    ``entrypoints_for(line)`` -> a set of entrypoint names, or None when every case may notice a
    change at ``line`` (module-level code run at import, or a line outside any top-level
    statement)."""

    def __init__(self, source: str, entrypoints: Iterable[str]):
        tree = ast.parse(source)
        self._spans: list[tuple[int, int]] = []
        for stmt in tree.body:
            first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
            self._spans.append((first, stmt.end_lineno or stmt.lineno))
        defs: dict[str, list[int]] = {}
        for k, stmt in enumerate(tree.body):
            for name in _defined_names(stmt):
                defs.setdefault(name, []).append(k)

        def uses(k: int) -> set[int]:
            return {j for n in ast.walk(tree.body[k]) if isinstance(n, ast.Name) for j in defs.get(n.id, ())}

        def closure(start: Iterable[int]) -> set[int]:
            seen: set[int] = set()
            todo = list(start)
            while todo:
                k = todo.pop()
                if k not in seen:
                    seen.add(k)
                    todo += uses(k)
            return seen

        # Module-level code that defines nothing (imports, calls, asserts) runs at import: what it
        # reaches may change every case. ``if __name__ == "__main__":`` never runs in a grading.
        at_import = closure(k for k, stmt in enumerate(tree.body)
                            if not _defined_names(stmt) and not _is_main_guard(stmt))
        per_entry = {e: closure(defs[e]) for e in entrypoints if e in defs}
        self._reached: list[frozenset[str] | None] = [
            None if k in at_import else frozenset(e for e, c in per_entry.items() if k in c)
            for k in range(len(tree.body))]

    def entrypoints_for(self, line: int) -> frozenset[str] | None:
        for k, (a, b) in enumerate(self._spans):
            if a <= line <= b:
                return self._reached[k]
        return None


WORTH = 0.5
"""A selection is used only when the cases it leaves out took at least this share of the
reference's case time: a selection costs a grading of the reference to trust, and a mutant that
passes its cases a second grading."""


class Planner:
    """The cases to grade each mutant on first, from what each case of the reference's grading
    called (``case_calls``: case name -> the functions it called; a case that called nothing is
    always kept) and how long it took (``case_seconds``). ``trust(cases)`` grades the reference on
    a selection and says whether it passed (called once per distinct selection, thread-safe)."""

    def __init__(self, reach: Reach, case_calls: dict[str, set[str]], case_seconds: dict[str, float],
                 trust: Callable[[frozenset[str]], bool]):
        self.reach = reach
        self.case_calls = case_calls
        self.case_seconds = case_seconds
        self.all_cases = frozenset(case_seconds)
        self._total = sum(case_seconds.values())
        self._trust = trust
        self._trusted: dict[frozenset[str], bool] = {}
        self._locks: dict[frozenset[str], threading.Lock] = {}
        self._lock = threading.Lock()

    def cases_for(self, mutant: Mutant) -> frozenset[str] | None:
        """The cases to grade ``mutant`` on first, or None for every case (no smaller selection
        is known, or the reference fails the selection)."""
        entry = self.reach.entrypoints_for(mutant.line)
        if entry is None:
            return None
        chosen = frozenset(c for c in self.all_cases if not self.case_calls.get(c) or self.case_calls[c] & entry)
        if sum(self.case_seconds[c] for c in self.all_cases - chosen) < WORTH * self._total:
            return None
        return chosen if self.trusted(chosen) else None

    def trusted(self, chosen: frozenset[str]) -> bool:
        """Does the reference pass when graded on ``chosen`` alone? (Graded once per selection.)"""
        if chosen == self.all_cases:
            return True
        with self._lock:
            lock = self._locks.setdefault(chosen, threading.Lock())
        with lock:
            if chosen not in self._trusted:
                self._trusted[chosen] = self._trust(chosen)
        return self._trusted[chosen]

    @property
    def distrusted(self) -> int:
        """How many selections the reference failed (their mutants were graded whole)."""
        return sum(not ok for ok in self._trusted.values())
