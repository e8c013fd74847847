"""``tests/wrong/<module>/equivalent.toml``: mutants no grader can kill, each with its reason.

A mutant is equivalent when it computes what the reference computes on every input the statement
allows (a clamp that never binds, a bound no valid input reaches). Such a mutant is listed by its
stable key, not by line number, so that edits elsewhere in the reference keep the entry valid::

    [[mutant]]
    operator = "compare"                       # a name from inferprep.mutate.OPERATORS
    line = "if tp <= k and k % tp:"            # the original line's text, stripped
    occurrence = 0                             # which of this operator's mutants of that line (default 0)
    reason = "tp == k makes k % tp zero: both branches agree"

Errors (``EquivalentFileError``, one message per problem, naming the file and the entry): not
TOML, an unknown key, a missing or multi-line reason, an unknown operator, a duplicate entry.
Whether each entry still matches a mutant, and whether the mutant really agrees with the
reference, is the engine's differential check (``inferprep.mutate.engine``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .mutants import Mutant
from .operators import OPERATORS

FILE_NAME = "equivalent.toml"
_KEYS = {"operator", "line", "occurrence", "reason"}


class EquivalentFileError(ValueError):
    """A malformed ``equivalent.toml``; ``problems`` lists every problem found."""

    def __init__(self, path: Path, problems: list[str]):
        self.path = path
        self.problems = problems
        super().__init__(f"{path}: " + "; ".join(problems))


@dataclass(frozen=True)
class Entry:
    """One listed equivalent mutant: its key (operator, line, occurrence) and why it is equivalent."""

    operator: str
    line: str
    occurrence: int
    reason: str

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.operator, self.line, self.occurrence)

    def __str__(self) -> str:
        return f"{self.operator} on `{self.line}` (occurrence {self.occurrence})"


def load(path: Path) -> list[Entry]:
    """The entries of ``path`` (none when the file does not exist). Raises ``EquivalentFileError``."""
    if not path.is_file():
        return []
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise EquivalentFileError(path, [f"not valid TOML: {e}"]) from e
    problems: list[str] = []
    extra = set(raw) - {"mutant"}
    if extra:
        problems.append(f"unknown top-level key(s) {', '.join(sorted(extra))} (entries are [[mutant]] tables)")
    items = raw.get("mutant", [])
    if not isinstance(items, list):
        raise EquivalentFileError(path, problems + ["`mutant` must be an array of tables ([[mutant]])"])
    entries: list[Entry] = []
    for n, item in enumerate(items, 1):
        where, before = f"entry {n}", len(problems)
        if not isinstance(item, dict):
            problems.append(f"{where}: not a table")
            continue
        unknown = set(item) - _KEYS
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; keys are {', '.join(sorted(_KEYS))}")
        op, line, occ, reason = item.get("operator"), item.get("line"), item.get("occurrence", 0), item.get("reason")
        if op not in OPERATORS:
            problems.append(f"{where}: operator {op!r} is not one of {', '.join(OPERATORS)}")
        if not isinstance(line, str) or not line.strip():
            problems.append(f"{where}: `line` must be the mutated line's text")
        if isinstance(occ, bool) or not isinstance(occ, int) or occ < 0:
            problems.append(f"{where}: `occurrence` must be an int >= 0")
        if not isinstance(reason, str) or not reason.strip() or "\n" in reason.strip():
            problems.append(f"{where}: `reason` must be one line saying why no input tells the mutant apart")
        if len(problems) > before:
            continue
        entry = Entry(op, line.strip(), occ, reason.strip())
        if any(e.key == entry.key for e in entries):
            problems.append(f"{where}: {entry} is listed twice")
            continue
        entries.append(entry)
    if problems:
        raise EquivalentFileError(path, problems)
    return entries


def match(entries: list[Entry], mutants: list[Mutant]) -> tuple[dict[tuple, Entry], list[str]]:
    """(the entries keyed by the mutant key they match, one error per entry matching no mutant)."""
    keys = {m.key for m in mutants}
    matched = {e.key: e for e in entries if e.key in keys}
    errors = [f"{FILE_NAME}: {e} matches no mutant of the reference (the line changed? list it again or "
              f"remove it)" for e in entries if e.key not in keys]
    return matched, errors
