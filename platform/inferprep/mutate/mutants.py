"""Mutants of a source text: where operators may act, and each edit rendered and verified.

The mutant's text is the original with only the mutated node's characters replaced (or only the
operator token, where one can be found), so a survivor's diff is one line, comments and layout
kept. Every edit is verified: the mutant must parse to exactly the intended tree, or the
mutation is dropped.

``generate(source, operators=None) -> list[Mutant]``: the mutants in a deterministic order
(line, column, then the operators' order), each with a display id ``operator@line:col#index``
and a stable key (operator, the original line's text, occurrence) that survives edits elsewhere
in the file (``equivalent.toml`` lists mutants by that key).
"""

from __future__ import annotations

import ast
import bisect
import difflib
from dataclasses import dataclass
from typing import Iterable, Iterator

from .operators import OPERATORS, Mutation, Source, dotted

__all__ = ["Mutant", "generate"]


@dataclass(frozen=True)
class Mutant:
    """One mutant of a source text.

    ``line`` (1-based) and ``col`` (0-based, characters) locate the first changed character;
    ``index`` counts mutants of the same operator at that spot; ``source_line`` is the original
    text of that line (stripped) and ``occurrence`` counts earlier mutants with the same operator
    and the same ``source_line``: (operator, source_line, occurrence) is the stable key."""

    operator: str
    line: int
    col: int
    index: int
    source_line: str
    occurrence: int
    description: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.operator}@{self.line}:{self.col}#{self.index}"

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.operator, self.source_line, self.occurrence)

    def diff(self, original: str, path: str = "reference.py", context: int = 1) -> str:
        """The unified diff from ``original`` to this mutant (``context`` lines around)."""
        return "".join(difflib.unified_diff(original.splitlines(True), self.code.splitlines(True),
                                            fromfile=path, tofile=f"{path} ({self.id})", n=context))


# -- where not to mutate ---------------------------------------------------------------------------

def _is_main_guard(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and dotted(node.test.left) == "__name__")


def _quiet_children(node: ast.AST) -> list[ast.AST]:
    """Children whose subtrees are not mutated: annotations, messages (f-strings, the exception a
    ``raise`` builds, ``assert``'s test), docstrings, ``__all__`` and ``if __name__ == ...``."""
    out: list[ast.AST] = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        out += [node.returns] if node.returns else []
        out += node.decorator_list
    if isinstance(node, ast.arg) and node.annotation:
        out.append(node.annotation)
    if isinstance(node, ast.AnnAssign):
        out.append(node.annotation)
    if isinstance(node, (ast.Raise, ast.Assert, ast.JoinedStr)):
        out += [c for c in ast.iter_child_nodes(node)]
    if _is_main_guard(node):
        out += [c for c in ast.iter_child_nodes(node)]
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
        out += [c for c in ast.iter_child_nodes(node)]
    if isinstance(node, ast.Call) and dotted(node.func) in ("print", "warnings.warn"):
        out += [c for c in ast.iter_child_nodes(node)]
    return out


def _defined_names(stmt: ast.stmt) -> set[str]:
    """The module-level names a top-level statement defines (none for other statements)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def unreachable(tree: ast.Module, entrypoints: Iterable[str]) -> set[int]:
    """ids of the top-level definitions the ``entrypoints`` never reach through the names they
    use (helpers kept for the editorial or the figures): a mistake there cannot change what a
    grader sees, so it makes no mutant. Statements that define nothing (module-level code) count
    as reached."""
    defs = {name: stmt for stmt in tree.body for name in _defined_names(stmt)}

    def uses(node: ast.AST) -> list[str]:
        return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in defs]
    todo = [e for e in entrypoints if e in defs]
    todo += [name for stmt in tree.body if not _defined_names(stmt) for name in uses(stmt)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += uses(defs[name])
    return {id(stmt) for stmt in tree.body if _defined_names(stmt) and not _defined_names(stmt) & seen}


def _mutable_nodes(tree: ast.AST, skip: set[int] = frozenset()) -> Iterator[ast.AST]:
    """Every node that operators may touch, depth first in source order (not under ``skip``)."""
    def visit(node: ast.AST, quiet: bool) -> Iterator[ast.AST]:
        if id(node) in skip:
            return
        if not quiet:
            yield node
        if _is_main_guard(node):
            return
        q = {id(c) for c in _quiet_children(node)}
        for child in ast.iter_child_nodes(node):
            yield from visit(child, quiet or id(child) in q)
    yield from visit(tree, False)


# -- rendering and verification ---------------------------------------------------------------------

def _parents(tree: ast.AST) -> dict[int, tuple[ast.AST, str, int | None]]:
    out = {}
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if isinstance(value, ast.AST):
                out[id(value)] = (parent, name, None)
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    if isinstance(v, ast.AST):
                        out[id(v)] = (parent, name, i)
    return out


def _statement_path(parents, node: ast.AST) -> tuple[ast.AST, list[tuple[str, int | None]]]:
    """The smallest statement holding ``node`` (``node`` itself if it is one) and the path of
    (field, index) steps that leads to it from the module."""
    stmt = node
    while not isinstance(stmt, ast.stmt):
        stmt = parents[id(stmt)][0]
    path, n = [], stmt
    while id(n) in parents:
        parent, name, i = parents[id(n)]
        path.append((name, i))
        n = parent
    return stmt, path[::-1]


def _follow(tree: ast.AST, path) -> ast.AST | None:
    n = tree
    for name, i in path:
        n = getattr(n, name, None)
        if i is not None:
            n = n[i] if isinstance(n, list) and i < len(n) else None
        if n is None:
            return None
    return n


def _expected_dump(parents, m: Mutation) -> tuple[str, list]:
    """``ast.dump`` of the smallest statement around ``m.target`` once ``m.new`` replaces it (the
    tree is restored), and that statement's path from the module."""
    parent, name, i = parents[id(m.target)]
    stmt, path = _statement_path(parents, m.target)
    if m.target is stmt:
        return ast.dump(m.new), path
    if i is None:
        setattr(parent, name, m.new)
        try:
            return ast.dump(stmt), path
        finally:
            setattr(parent, name, m.target)
    seq = getattr(parent, name)
    seq[i] = m.new
    try:
        return ast.dump(stmt), path
    finally:
        seq[i] = m.target


def _candidates(src: Source, m: Mutation) -> Iterator[tuple[int, bytes, bool]]:
    """(where the change is shown, the mutant's bytes, whether that offset is exact: a token edit
    points at the token; other edits at the target's start, moved to the first differing byte)."""
    a, b = src.span(m.target)
    if m.token_edit is not None:
        g0, g1, old, new = m.token_edit
        gap = src.data[g0:g1].decode("utf-8")
        stripped = gap.strip(" \t\n()\\")
        if stripped == old:
            pos = gap.index(old)
            at = g0 + len(gap[:pos].encode())
            yield at, src.data[:g0] + (gap[:pos] + new + gap[pos + len(old):]).encode() + src.data[g1:], True
    for text in m.texts:
        yield a, src.data[:a] + text.encode() + src.data[b:], False
    try:
        text = ast.unparse(m.new)
    except Exception:  # noqa: BLE001 - a node unparse cannot print: no fallback text
        return
    for t in (text, f"({text})"):
        yield a, src.data[:a] + t.encode() + src.data[b:], False


def _top_span(src: Source, tree: ast.Module, k: int) -> tuple[int, int]:
    """Byte span of whole lines holding the module's ``k``-th statement (decorators included)."""
    top = tree.body[k]
    first = min([top.lineno] + [d.lineno for d in getattr(top, "decorator_list", [])])
    return src.starts[first - 1], src.starts[min(top.end_lineno, len(src.starts) - 1)]


def _parses_to(data: bytes, src: Source, tree: ast.Module, path, want: str) -> bool:
    """Does the mutant ``data`` parse to the original tree with the statement at ``path`` dumping
    to ``want``? The text outside the edited top-level statement is the original's, so that
    statement's lines are parsed alone (a module parse of each mutant would cost 10x more); when
    they do not stand alone (``a = 1; b = 2`` across the edge), the whole module is parsed."""
    (_, k), rest = path[0], path[1:]
    a, b = _top_span(src, tree, k)
    try:
        frag = ast.parse(data[a:b + len(data) - len(src.data)])
        if len(frag.body) == 1:
            got = _follow(frag, [("body", 0), *rest])
            return got is not None and ast.dump(got) == want
        whole = ast.parse(data)
    except (SyntaxError, ValueError):
        return False
    got = _follow(whole, path)
    return got is not None and len(whole.body) == len(tree.body) and ast.dump(got) == want


def _render(src: Source, tree: ast.Module, parents, m: Mutation) -> tuple[str, int] | None:
    """The mutant's text and the byte offset where it first differs: the first candidate edit
    that parses to exactly the intended tree."""
    want, path = _expected_dump(parents, m)
    for start, data, exact in _candidates(src, m):
        if _parses_to(data, src, tree, path, want):
            while not exact and start < len(data) and start < len(src.data) and data[start] == src.data[start]:
                start += 1
            return data.decode("utf-8"), start
    return None


def _line_col(src: Source, offset: int) -> tuple[int, int]:
    """(line 1-based, column 0-based in characters) of a byte offset."""
    line = bisect.bisect_right(src.starts, offset)
    return line, len(src.data[src.starts[line - 1]:offset].decode("utf-8", "replace"))


def generate(source: str, operators: Iterable[str] | None = None,
             entrypoints: Iterable[str] | None = None) -> list[Mutant]:
    """The mutants of ``source`` made by ``operators`` (names from ``OPERATORS``; all when None),
    in the code the ``entrypoints`` reach (all code when None; see ``unreachable``).

    Deterministic: the same text and operators give the same mutants in the same order. Mutants
    whose text equals the original or an earlier mutant's are left out. Raises ``SyntaxError``
    when ``source`` does not parse and ``ValueError`` naming an unknown operator."""
    names = list(OPERATORS) if operators is None else list(operators)
    unknown = [n for n in names if n not in OPERATORS]
    if unknown:
        raise ValueError(f"unknown mutation operator(s) {', '.join(unknown)}; known: {', '.join(OPERATORS)}")
    tree = ast.parse(source)
    src = Source(source, tree)
    parents = _parents(tree)
    lines = source.splitlines()
    found: list[tuple[int, int, int, str, str, str]] = []  # line, col, order, operator, description, text
    seen = {source}
    skip = unreachable(tree, entrypoints) if entrypoints is not None else set()
    for node in _mutable_nodes(tree, skip):
        for name in names:
            for m in OPERATORS[name](node, src):
                rendered = _render(src, tree, parents, m)
                if rendered is None or rendered[0] in seen:
                    continue
                text = rendered[0]
                seen.add(text)
                line, col = _line_col(src, rendered[1])
                found.append((line, col, len(found), name, m.description, text))
    found.sort(key=lambda f: (f[0], f[1], names.index(f[3]), f[2]))
    out: list[Mutant] = []
    index: dict[tuple, int] = {}
    occurrence: dict[tuple, int] = {}
    for line, col, _, name, description, text in found:
        i = index[(name, line, col)] = index.get((name, line, col), -1) + 1
        source_line = lines[line - 1].strip() if line <= len(lines) else ""
        k = occurrence[(name, source_line)] = occurrence.get((name, source_line), -1) + 1
        out.append(Mutant(name, line, col, i, source_line, k, description, text))
    return out
