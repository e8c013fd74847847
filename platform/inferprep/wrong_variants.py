"""Known-wrong variants: ``tests/wrong/<module>/<name>.py`` or ``<name>.patch``.

A variant that is a small change of the reference is kept as a patch: a unified diff against
``reference/<module>.py`` whose header (the text before the first ``--- `` line, which ``patch``
and ``git apply`` skip) says the mistake and where it comes from. The header's first line
declares the group the variant targets, in the same form as a whole file's docstring
(``WRONG (input checks): ...`` targets the input checks, anything else the core cases). A
variant that is a different algorithm stays a whole file.

The patch is applied here, in memory, by a strict applier: every context and removed line must
match the reference exactly (no fuzz, no whitespace folding). A hunk may sit at another line
than its ``@@`` says (the reference grew or shrank above it); the nearest exact match wins.

Errors (both ``ValueError``, so ``check-exercise`` reports them as failed checks)::

    ValueError
     ├── MalformedPatch   the .patch file is not a unified diff this module reads
     └── StalePatch       a hunk no longer matches the reference (names the file and the hunk)
"""

from __future__ import annotations

import ast
import difflib
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .verdict import CORE, INPUT_CHECKS

SUFFIXES = (".py", ".patch")
"""The two forms of a known-wrong variant: a whole file, or a patch against the reference."""

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"
HEADER_FORBIDDEN = ("--- ", "+++ ", "@@ ", "diff ", "Index:", "*** ")
"""Line starts a patch header must not have: ``patch``/``git apply`` would read them as a diff."""


class MalformedPatch(ValueError):
    """The file is not a unified diff of one file (the message names the file and the line)."""


class StalePatch(ValueError):
    """A hunk's context or removed lines are no longer in the reference."""


@dataclass(frozen=True)
class Hunk:
    """One ``@@ -old_start,old_len +new_start,new_len @@`` block; ``lines`` are ``(op, text)``
    with op one of ``' '``, ``'-'``, ``'+'`` and text ending in ``\\n`` unless the file does not."""
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[tuple[str, str], ...]

    @property
    def at(self) -> str:
        return f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@"

    @property
    def old(self) -> list[str]:
        return [t for op, t in self.lines if op != "+"]

    @property
    def new(self) -> list[str]:
        return [t for op, t in self.lines if op != "-"]


@dataclass(frozen=True)
class Patch:
    header: str
    old_path: str
    new_path: str
    hunks: tuple[Hunk, ...]


def split_header(text: str) -> tuple[str, str]:
    """``(header, diff)``: the text before the first line starting with ``--- ``, and the rest."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("--- "):
            return "".join(lines[:i]), "".join(lines[i:])
    return text, ""


def parse_patch(text: str, name: str = "<patch>") -> Patch:
    """Read a unified diff of one file. Raises ``MalformedPatch`` naming ``name`` and the line."""
    header, body = split_header(text)
    if not body:
        raise MalformedPatch(f"{name}: no '--- ' line: not a unified diff")
    lines = body.splitlines(keepends=True)
    if len(lines) < 2 or not lines[1].startswith("+++ "):
        raise MalformedPatch(f"{name}: the '--- ' line must be followed by a '+++ ' line")
    old_path, new_path = lines[0][4:].strip(), lines[1][4:].strip()
    base = header.count("\n") + 1            # 1-based line number in the file, for messages
    hunks: list[Hunk] = []
    i = 2
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            raise MalformedPatch(f"{name}: line {base + i}: expected a hunk ('@@ -a,b +c,d @@'), got "
                                 f"{lines[i].rstrip()!r}")
        o0, ol, n0, nl = (int(g) if g is not None else 1 for g in m.groups())
        body_lines: list[tuple[str, str]] = []
        n_old = n_new = 0
        i += 1
        while (n_old < ol or n_new < nl) and i < len(lines):
            line = lines[i]
            op, t = (line[0], line[1:]) if line not in ("\n", "") else (" ", "\n")
            if op not in " -+":
                raise MalformedPatch(f"{name}: line {base + i}: a hunk line must start with ' ', '-' or '+'")
            n_old += op != "+"
            n_new += op != "-"
            body_lines.append((op, t))
            i += 1
            if i < len(lines) and lines[i].rstrip("\n") == _NO_NEWLINE:
                body_lines[-1] = (op, t.rstrip("\n"))
                i += 1
        if (n_old, n_new) != (ol, nl):
            raise MalformedPatch(f"{name}: hunk {len(hunks) + 1} ({m.group(0)}) has {n_old} old and {n_new} new "
                                 f"lines; its header says {ol} and {nl}")
        hunks.append(Hunk(o0, ol, n0, nl, tuple(body_lines)))
    if not hunks:
        raise MalformedPatch(f"{name}: no hunks")
    return Patch(header, old_path, new_path, tuple(hunks))


def apply_patch(patch: Patch, original: str, name: str = "<patch>", original_name: str = "<original>") -> str:
    """The text of ``original`` with ``patch`` applied. Each hunk's old lines must match exactly,
    in order, without overlapping the previous hunk; the match nearest the line its ``@@`` gives
    is used. Raises ``StalePatch`` naming the file, the hunk and the first line that differs."""
    src = original.splitlines(keepends=True)
    out: list[str] = []
    pos = 0                                   # first line of src not yet copied
    for k, h in enumerate(patch.hunks, 1):
        old = h.old
        want = max(h.old_start - 1, 0) if h.old_len else h.old_start   # '-a,0' inserts after line a
        at = _nearest_match(src, old, want, pos)
        if at is None:
            raise StalePatch(f"{name}: hunk {k} ({h.at}) does not apply to {original_name}: "
                             + _first_difference(src, old, max(want, pos)))
        out += src[pos:at]
        out += h.new
        pos = at + len(old)
    out += src[pos:]
    return "".join(out)


def _nearest_match(src: list[str], old: list[str], want: int, lo: int) -> int | None:
    n = len(old)
    for d in range(len(src) + 1):
        for at in ((want - d, want + d) if d else (want,)):
            if lo <= at <= len(src) - n and src[at:at + n] == old:
                return at
        if want - d < lo and want + d > len(src) - n:
            return None
    return None


def _first_difference(src: list[str], old: list[str], at: int) -> str:
    for j, expected in enumerate(old):
        got = src[at + j] if at + j < len(src) else None
        if got != expected:
            shown = "the end of the file" if got is None else repr(got.rstrip("\n"))
            return f"line {at + j + 1} is {shown}, the patch expects {expected.rstrip(chr(10))!r}"
    return "its lines are there, but overlap the previous hunk"


def make_patch(original: str, changed: str, header: str, path: str) -> str:
    """A unified diff (3 lines of context) turning ``original`` into ``changed``, with ``header``
    before it and ``a/<path>``, ``b/<path>`` as the file names (``git apply`` from the repository
    root applies it to ``path``). Raises ValueError when the two texts are equal or the header
    has a line ``patch`` would read as a diff."""
    bad = [line for line in header.splitlines() if line.startswith(HEADER_FORBIDDEN)]
    if bad:
        raise ValueError(f"a patch header line may not start with {HEADER_FORBIDDEN}: {bad[0]!r}")
    a, b = original.splitlines(keepends=True), changed.splitlines(keepends=True)
    if a == b:
        raise ValueError("the variant equals the reference")
    body = []
    for line in difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", n=3):
        body.append(line if line.endswith("\n") else line + "\n" + _NO_NEWLINE + "\n")
    head = header if not header or header.endswith("\n") else header + "\n"
    return head + "".join(body)


def target_of(first_line: str) -> str:
    """The group a variant targets from its declaring line: ``(input checks)`` in it means the
    input checks, anything else the core cases."""
    return INPUT_CHECKS if "(input checks)" in first_line.lower() else CORE


@dataclass(frozen=True)
class WrongVariant:
    """One known-wrong variant of the exercise whose reference is ``reference_path``."""
    path: Path
    reference_path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def is_patch(self) -> bool:
        return self.path.suffix == ".patch"

    def _text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def _patch_name(self) -> str:
        return _shown(self.path)

    def source(self) -> str:
        """The variant's Python source: the file itself, or the reference with the patch applied.
        Raises ``MalformedPatch`` or ``StalePatch`` (ValueErrors naming the file)."""
        if not self.is_patch:
            return self._text()
        patch = parse_patch(self._text(), self._patch_name())
        if Path(patch.old_path).name != self.reference_path.name:
            raise MalformedPatch(f"{self._patch_name()}: a patch against {patch.old_path}, not against "
                                 f"{_shown(self.reference_path)}")
        return apply_patch(patch, self.reference_path.read_text(encoding="utf-8"), self._patch_name(),
                           _shown(self.reference_path))

    def description(self) -> str:
        """What the variant says of its mistake: the patch header, or the module docstring."""
        if self.is_patch:
            return split_header(self._text())[0].strip()
        try:
            return (ast.get_docstring(ast.parse(self._text())) or "").strip()
        except SyntaxError as e:
            raise ValueError(f"{self._patch_name()} does not parse: {e}") from None

    def target(self) -> str:
        """``CORE`` or ``INPUT_CHECKS``, from the first line of ``description``. Raises ValueError
        when there is no description (the header is where a variant says what mistake it makes)."""
        text = self.description()
        if not text:
            where = "a header line before '--- '" if self.is_patch else "a docstring"
            raise ValueError(f"{self._patch_name()}: a known-wrong variant needs {where} naming its mistake "
                             "(and '(input checks)' on its first line if it targets only the input checks)")
        return target_of(text.splitlines()[0])


def _shown(p: Path) -> str:
    """``p`` relative to the content root where it is inside it (for messages)."""
    try:
        return p.relative_to(paths.content_root()).as_posix()
    except ValueError:
        return str(p)


def variants_of(module: str) -> list[WrongVariant]:
    """Every known-wrong variant of ``module``, sorted by file name."""
    d = paths.wrong_dir() / module
    ref = paths.reference_dir() / f"{module}.py"
    found = sorted(p for s in SUFFIXES for p in d.glob(f"*{s}")) if d.is_dir() else []
    return [WrongVariant(p, ref) for p in found]


def variant(module: str, name: str) -> WrongVariant:
    """The variant ``name`` (no suffix) of ``module``, whichever form it is kept in. Raises
    FileNotFoundError when there is none, ValueError when both forms exist."""
    found = [v for v in variants_of(module) if v.stem == name]
    if not found:
        raise FileNotFoundError(f"no known-wrong variant {name!r} in {_shown(paths.wrong_dir() / module)}/")
    if len(found) > 1:
        raise ValueError(f"{name!r} is kept twice in {_shown(paths.wrong_dir() / module)}/: "
                         f"{', '.join(v.name for v in found)}")
    return found[0]


def source_of(module: str, name: str) -> str:
    """The Python source of the variant ``name`` of ``module`` (see ``variant``)."""
    return variant(module, name).source()


def load_variant(module: str, name: str, module_name: str) -> types.ModuleType:
    """Import the variant ``name`` of ``module`` (trusted code: tests and figures only) under the
    private module name ``module_name``."""
    v = variant(module, name)
    mod = types.ModuleType(module_name)
    mod.__file__ = str(v.path)
    sys.modules[module_name] = mod
    exec(compile(v.source(), str(v.path), "exec"), mod.__dict__)
    return mod
