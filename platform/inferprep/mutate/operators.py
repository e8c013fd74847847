"""Mutant generation: small, deliberate mistakes made in a reference solution's source.

Each operator models a classic slip of this material (a boundary ``<`` for ``<=``, an off-by-one
index, float32 where float64 was due, floor for ceil, a dropped ``raise``, an in-place call that
discards its result, a reversed loop, min for max, ...). Operators look at Python's ``ast``;
the mutant's text is the original with only the mutated node's characters replaced (or only the
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
import copy
import difflib
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

__all__ = ["OPERATORS", "Mutant", "generate"]


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


@dataclass
class _Mutation:
    target: ast.AST          # the node replaced
    new: ast.AST             # what replaces it
    description: str
    texts: tuple[str, ...]   # candidate replacement texts for the target's characters, best first
    token_edit: tuple[int, int, str, str] | None = None  # (start, end) byte gap, old token, new token


Operator = Callable[[ast.AST, "_Source"], Iterator[_Mutation]]


class _Source:
    """The source as UTF-8 bytes (``ast`` offsets are byte offsets) and segment helpers."""

    def __init__(self, text: str):
        self.text = text
        self.data = text.encode("utf-8")
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        a, b = self.span(node)
        return self.data[a:b].decode("utf-8")


def _mutation(target: ast.AST, new: ast.AST, description: str, *texts: str,
              token_edit: tuple[int, int, str, str] | None = None) -> _Mutation:
    return _Mutation(target, new, description, tuple(texts), token_edit)


def _replaced(node: ast.AST, **fields) -> ast.AST:
    new = copy.copy(node)
    for k, v in fields.items():
        setattr(new, k, v)
    return new


def _dotted(node: ast.AST) -> str:
    """``torch.float64`` -> "torch.float64"; "" for anything that is not a dotted name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _gap_edit(src: _Source, left: ast.AST, right: ast.AST, old: str, new: str) -> tuple[int, int, str, str]:
    return (src.span(left)[1], src.span(right)[0], old, new)


# -- operators ----------------------------------------------------------------------------------

_COMPARE = {ast.Lt: (ast.LtE, "<", "<="), ast.LtE: (ast.Lt, "<=", "<"), ast.Gt: (ast.GtE, ">", ">="),
            ast.GtE: (ast.Gt, ">=", ">"), ast.Eq: (ast.NotEq, "==", "!="), ast.NotEq: (ast.Eq, "!=", "==")}


def op_compare(node, src):
    """Boundary flips ``<``/``<=``, ``>``/``>=`` and ``==``/``!=``."""
    if not isinstance(node, ast.Compare):
        return
    for i, op in enumerate(node.ops):
        if type(op) not in _COMPARE:
            continue
        new_op, old_tok, new_tok = _COMPARE[type(op)]
        ops = list(node.ops)
        ops[i] = new_op()
        left = node.left if i == 0 else node.comparators[i - 1]
        yield _mutation(node, _replaced(node, ops=ops), f"`{old_tok}` -> `{new_tok}`",
                        token_edit=_gap_edit(src, left, node.comparators[i], old_tok, new_tok))


def _int_constant(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def op_constant(node, src):
    """Off-by-one integer constants: ``n`` -> ``n + 1`` and ``n - 1`` (written as the new literal)."""
    if _int_constant(node):
        for delta in (1, -1):
            value = node.value + delta
            if value >= 0:
                yield _mutation(node, ast.Constant(value), f"`{node.value}` -> `{value}`", str(value))


def _plus_minus(node: ast.expr, src: _Source, what: str) -> Iterator[_Mutation]:
    text = src.segment(node)
    for sign, op in (("+", ast.Add), ("-", ast.Sub)):
        new = ast.BinOp(node, op(), ast.Constant(1))
        yield _mutation(node, new, f"{what} `{text}` -> `{text} {sign} 1`", f"{text} {sign} 1", f"({text}) {sign} 1")


def op_index(node, src):
    """Off-by-one indices and slice bounds: ``x[i]`` -> ``x[i + 1]``, ``x[i - 1]`` (non-constant
    indices; constants are the ``constant`` operator's)."""
    if not isinstance(node, ast.Subscript):
        return
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    for part in parts:
        bounds = [part.lower, part.upper] if isinstance(part, ast.Slice) else [part]
        for b in bounds:
            if b is None or isinstance(b, (ast.Constant, ast.Slice, ast.JoinedStr, ast.Starred)):
                continue
            if isinstance(b, ast.UnaryOp) and isinstance(b.operand, ast.Constant):
                continue
            if (isinstance(b, ast.BinOp) and isinstance(b.op, (ast.Add, ast.Sub))
                    and _int_constant(b.right)):
                continue  # x[i - 1]: the constant operator already makes x[i - 2] and x[i - 0]
            yield from _plus_minus(b, src, "index")


def op_range_bound(node, src):
    """Off-by-one loop bounds: a non-constant argument of ``range(...)`` plus or minus one."""
    if isinstance(node, ast.Call) and _dotted(node.func) == "range" and not node.keywords:
        for arg in node.args[:2]:
            if not isinstance(arg, (ast.Constant, ast.Starred)):
                yield from _plus_minus(arg, src, "range bound")


# Type checks and attribute access (a swap only raises), and symmetric functions (a swap is equivalent).
_NO_SWAP = {"isinstance", "issubclass", "getattr", "setattr", "hasattr", "print", "super", "min", "max",
            "minimum", "maximum", "fmin", "fmax", "gcd", "lcm", "hypot", "isclose", "allclose", "equal", "eq",
            "ne", "add", "mul", "logical_and", "logical_or", "logical_xor"}


def op_swap_args(node, src):
    """Swapped neighbouring positional arguments of a call: ``f(a, b)`` -> ``f(b, a)``."""
    if not isinstance(node, ast.Call) or _dotted(node.func).split(".")[-1] in _NO_SWAP:
        return
    args = node.args
    for i in range(len(args) - 1):
        a, b = args[i], args[i + 1]
        if isinstance(a, ast.Starred) or isinstance(b, ast.Starred):
            continue
        ta, tb = src.segment(a), src.segment(b)
        if ta == tb:
            continue
        swapped = list(args)
        swapped[i], swapped[i + 1] = b, a
        # Only the two arguments' characters change: rebuild the call text between them.
        (sa, ea), (sb, eb) = src.span(a), src.span(b)
        whole_a, whole_b = src.span(node)
        head = src.data[whole_a:sa].decode()
        mid = src.data[ea:sb].decode()
        tail = src.data[eb:whole_b].decode()
        yield _mutation(node, _replaced(node, args=swapped), f"swapped `{ta}` and `{tb}`", head + tb + mid + ta + tail)


def op_drop_term(node, src):
    """A dropped term of a sum or difference: ``a + b`` -> ``a`` and ``b``; ``a - b`` -> ``a``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        keep = [node.left, node.right] if isinstance(node.op, ast.Add) else [node.left]
        for k in keep:
            t = src.segment(k)
            yield _mutation(node, k, f"`{src.segment(node)}` -> `{t}`", t, f"({t})")


def op_drop_factor(node, src):
    """A dropped factor or divisor: ``a * b`` -> ``a`` and ``b``; ``a / b`` and ``a // b`` -> ``a``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div, ast.FloorDiv)):
        keep = [node.left, node.right] if isinstance(node.op, ast.Mult) else [node.left]
        for k in keep:
            t = src.segment(k)
            yield _mutation(node, k, f"`{src.segment(node)}` -> `{t}`", t, f"({t})")


_ARITH = {ast.Add: (ast.Sub, "+", "-"), ast.Sub: (ast.Add, "-", "+"), ast.Mult: (ast.Div, "*", "/"),
          ast.Div: (ast.Mult, "/", "*")}


def op_arith(node, src):
    """Sign and inverse slips: ``+``/``-`` and ``*``/``/``."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        new_op, old, new = _ARITH[type(node.op)]
        yield _mutation(node, _replaced(node, op=new_op()), f"`{old}` -> `{new}`",
                        token_edit=_gap_edit(src, node.left, node.right, old, new))


def op_augassign(node, src):
    """Overwrite instead of accumulate: ``x += y`` -> ``x = y``."""
    if isinstance(node, ast.AugAssign):
        new = ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)
        yield _mutation(node, new, "accumulate -> overwrite", f"{src.segment(node.target)} = {src.segment(node.value)}")


_DTYPES = {"float64": "float32", "double": "float32", "float32": "bfloat16", "float": "bfloat16",
           "bfloat16": "float16", "float16": "bfloat16", "half": "bfloat16", "int64": "int32", "long": "int32",
           "float8_e4m3fn": "float8_e5m2", "float8_e5m2": "float8_e4m3fn"}
_DTYPE_MODULES = {"torch", "np", "numpy"}
_DTYPE_METHODS = {"double": "float", "float": "bfloat16", "half": "bfloat16", "bfloat16": "half", "long": "int"}


def _rename_attr(node: ast.Attribute, src: _Source, new_attr: str) -> _Mutation:
    base = src.segment(node.value)
    return _mutation(node, _replaced(node, attr=new_attr), f"`.{node.attr}` -> `.{new_attr}`",
                     f"{base}.{new_attr}", f"({base}).{new_attr}")


def op_dtype(node, src):
    """Lower or swapped precision: ``torch.float64`` -> ``torch.float32``, float32 -> bfloat16,
    bfloat16 <-> float16, int64 -> int32, e4m3 <-> e5m2; ``.double()`` -> ``.float()``, ..."""
    if isinstance(node, ast.Attribute) and _dotted(node.value) in _DTYPE_MODULES and node.attr in _DTYPES:
        if node.attr == "float" and _dotted(node.value) != "torch":
            return
        yield _rename_attr(node, src, _DTYPES[node.attr])
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
          and not node.keywords and node.func.attr in _DTYPE_METHODS and _dotted(node.func.value) not in _DTYPE_MODULES):
        yield _rename_attr(node.func, src, _DTYPE_METHODS[node.func.attr])


_ROUNDING = {"floor": ("ceil",), "ceil": ("floor",), "round": ("floor", "ceil"), "trunc": ("round",)}


def op_rounding(node, src):
    """Rounding swaps: floor <-> ceil, round -> floor/ceil (``math``, ``torch``, numpy, tensor
    methods), ``round(x)`` <-> ``int(x)``, and ``//`` <-> ``/``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ROUNDING:
        for new in _ROUNDING[node.func.attr]:
            yield _rename_attr(node.func, src, new)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("round", "int")
          and len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Constant)):
        new = "int" if node.func.id == "round" else "round"
        arg = src.segment(node.args[0])
        yield _mutation(node, _replaced(node, func=ast.Name(new, ast.Load())), f"`{node.func.id}(...)` -> `{new}(...)`",
                        f"{new}({arg})")
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Div)):
        old, new, new_op = ("//", "/", ast.Div) if isinstance(node.op, ast.FloorDiv) else ("/", "//", ast.FloorDiv)
        yield _mutation(node, _replaced(node, op=new_op()), f"`{old}` -> `{new}`",
                        token_edit=_gap_edit(src, node.left, node.right, old, new))


def op_remove_raise(node, src):
    """A removed ``raise`` (the check that guards an input or an invariant is gone)."""
    if isinstance(node, ast.Raise):
        yield _mutation(node, ast.Pass(), "`raise` removed", "pass")


def op_in_place(node, src):
    """In-place vs copy: ``x.add_(y)`` -> ``x.add(y)`` (the result is then dropped or not
    aliased), and a dropped ``.clone()`` / ``.copy()`` / ``copy.deepcopy(...)``."""
    if not isinstance(node, ast.Call):
        return
    f = node.func
    if (isinstance(f, ast.Attribute) and f.attr.endswith("_") and not f.attr.endswith("__")
            and not f.attr.startswith("_") and len(f.attr) > 1):
        yield _rename_attr(f, src, f.attr[:-1])
    elif isinstance(f, ast.Attribute) and f.attr in ("clone", "copy") and not node.args and not node.keywords \
            and _dotted(f.value) not in ("copy", "torch", "np", "numpy"):
        t = src.segment(f.value)
        yield _mutation(node, f.value, f"`.{f.attr}()` dropped", t, f"({t})")
    elif _dotted(f) in ("copy.copy", "copy.deepcopy") and len(node.args) == 1:
        t = src.segment(node.args[0])
        yield _mutation(node, node.args[0], f"`{_dotted(f)}(...)` dropped", t, f"({t})")


_ITERABLE = (ast.Name, ast.Attribute, ast.Subscript, ast.List, ast.Tuple)


def op_reversed(node, src):
    """Reversed iteration: ``reversed(x)`` -> ``x``, ``for v in x`` -> ``for v in reversed(x)``,
    ``x[::-1]`` -> ``x``, and ``sorted``'s ``reverse`` flag flipped."""
    if isinstance(node, ast.Call) and _dotted(node.func) == "reversed" and len(node.args) == 1:
        t = src.segment(node.args[0])
        yield _mutation(node, node.args[0], "`reversed(...)` dropped", t)
    elif isinstance(node, (ast.For, ast.comprehension)):
        it = node.iter
        if isinstance(it, _ITERABLE) or (isinstance(it, ast.Call) and _dotted(it.func) in ("range", "sorted", "list")):
            t = src.segment(it)
            new = ast.Call(ast.Name("reversed", ast.Load()), [it], [])
            yield _mutation(it, new, f"`{t}` iterated in reverse", f"reversed({t})")
    elif (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.lower is None
          and node.slice.upper is None and isinstance(node.slice.step, ast.UnaryOp)
          and isinstance(node.slice.step.operand, ast.Constant) and node.slice.step.operand.value == 1):
        t = src.segment(node.value)
        yield _mutation(node, node.value, "`[::-1]` dropped", t, f"({t})")
    elif isinstance(node, ast.Call) and (_dotted(node.func) == "sorted" or
                                        isinstance(node.func, ast.Attribute) and node.func.attr == "sort"):
        for i, kw in enumerate(node.keywords):
            if kw.arg == "reverse" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool):
                flipped = not kw.value.value
                kws = list(node.keywords)
                kws[i] = ast.keyword("reverse", ast.Constant(flipped))
                yield _mutation(kw.value, ast.Constant(flipped), f"`reverse={kw.value.value}` -> `reverse={flipped}`",
                                str(flipped))
                return
        if not any(kw.arg == "reverse" for kw in node.keywords) and node.args:
            new = _replaced(node, keywords=[*node.keywords, ast.keyword("reverse", ast.Constant(True))])
            t = src.segment(node)
            yield _mutation(node, new, "sorted in reverse", t[:-1].rstrip().rstrip(",") + ", reverse=True)")


_MIN_MAX = {"min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum", "amin": "amax",
            "amax": "amin", "argmin": "argmax", "argmax": "argmin", "clamp_min": "clamp_max",
            "clamp_max": "clamp_min", "fmin": "fmax", "fmax": "fmin", "nanmin": "nanmax", "nanmax": "nanmin",
            "cummax": "cummin", "cummin": "cummax"}


def op_min_max(node, src):
    """min <-> max (builtins, ``torch``/numpy functions and methods, ``clamp(min=...)`` keywords)."""
    if not isinstance(node, ast.Call):
        return
    f = node.func
    if isinstance(f, ast.Name) and f.id in ("min", "max"):
        new = _MIN_MAX[f.id]
        t = src.segment(node)
        yield _mutation(node, _replaced(node, func=ast.Name(new, ast.Load())), f"`{f.id}` -> `{new}`",
                        new + t[len(f.id):])
    elif isinstance(f, ast.Attribute) and f.attr in _MIN_MAX:
        yield _rename_attr(f, src, _MIN_MAX[f.attr])
    if isinstance(f, ast.Attribute) and f.attr in ("clamp", "clip", "clamp_", "clip_"):
        names = [kw.arg for kw in node.keywords]
        if names.count("min") + names.count("max") == 1:
            kw = node.keywords[names.index("min" if "min" in names else "max")]
            new_name = "max" if kw.arg == "min" else "min"
            yield _mutation(kw, ast.keyword(new_name, kw.value), f"`{kw.arg}=` -> `{new_name}=`",
                            f"{new_name}={src.segment(kw.value)}")


def op_boolean(node, src):
    """``and`` <-> ``or`` and a dropped ``not``."""
    if isinstance(node, ast.BoolOp):
        old, new, new_op = ("and", "or", ast.Or) if isinstance(node.op, ast.And) else ("or", "and", ast.And)
        yield _mutation(node, _replaced(node, op=new_op()), f"`{old}` -> `{new}`",
                        token_edit=_gap_edit(src, node.values[0], node.values[1], old, new))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        t = src.segment(node.operand)
        yield _mutation(node, node.operand, "`not` dropped", t, f"({t})")


def op_break_continue(node, src):
    """``break`` <-> ``continue``."""
    if isinstance(node, (ast.Break, ast.Continue)):
        new, text = (ast.Continue(), "continue") if isinstance(node, ast.Break) else (ast.Break(), "break")
        yield _mutation(node, new, f"`{src.segment(node)}` -> `{text}`", text)


_TRIANGLE = {"tril": "triu", "triu": "tril", "tril_": "triu_", "triu_": "tril_"}


def op_tril_triu(node, src):
    """Upper vs lower triangle (a causal mask's classic slip): ``tril`` <-> ``triu``."""
    if isinstance(node, ast.Attribute) and node.attr in _TRIANGLE:
        yield _rename_attr(node, src, _TRIANGLE[node.attr])


OPERATORS: dict[str, Operator] = {
    "compare": op_compare, "constant": op_constant, "index": op_index, "range-bound": op_range_bound,
    "swap-args": op_swap_args, "drop-term": op_drop_term, "drop-factor": op_drop_factor, "arith": op_arith,
    "augassign": op_augassign, "dtype": op_dtype, "rounding": op_rounding, "remove-raise": op_remove_raise,
    "in-place": op_in_place, "reversed": op_reversed, "min-max": op_min_max, "boolean": op_boolean,
    "break-continue": op_break_continue, "tril-triu": op_tril_triu,
}
"""Operator name -> generator, in the order their mutants are listed at one spot."""


# -- where not to mutate ---------------------------------------------------------------------------

def _is_main_guard(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and _dotted(node.test.left) == "__name__")


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
    if isinstance(node, ast.Call) and _dotted(node.func) in ("print", "warnings.warn"):
        out += [c for c in ast.iter_child_nodes(node)]
    return out


def _mutable_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node that operators may touch, depth first in source order."""
    def visit(node: ast.AST, quiet: bool) -> Iterator[ast.AST]:
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


def _expected_dump(parents, m: _Mutation) -> tuple[str, list]:
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


def _candidates(src: _Source, m: _Mutation) -> Iterator[tuple[int, bytes, bool]]:
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


def _top_span(src: _Source, tree: ast.Module, k: int) -> tuple[int, int]:
    """Byte span of whole lines holding the module's ``k``-th statement (decorators included)."""
    top = tree.body[k]
    first = min([top.lineno] + [d.lineno for d in getattr(top, "decorator_list", [])])
    return src.starts[first - 1], src.starts[min(top.end_lineno, len(src.starts) - 1)]


def _parses_to(data: bytes, src: _Source, tree: ast.Module, path, want: str) -> bool:
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


def _render(src: _Source, tree: ast.Module, parents, m: _Mutation) -> tuple[str, int] | None:
    """The mutant's text and the byte offset where it first differs: the first candidate edit
    that parses to exactly the intended tree."""
    want, path = _expected_dump(parents, m)
    for start, data, exact in _candidates(src, m):
        if _parses_to(data, src, tree, path, want):
            while not exact and start < len(data) and start < len(src.data) and data[start] == src.data[start]:
                start += 1
            return data.decode("utf-8"), start
    return None


def _line_col(src: _Source, offset: int) -> tuple[int, int]:
    """(line 1-based, column 0-based in characters) of a byte offset."""
    line = bisect.bisect_right(src.starts, offset)
    return line, len(src.data[src.starts[line - 1]:offset].decode("utf-8", "replace"))


def generate(source: str, operators: Iterable[str] | None = None) -> list[Mutant]:
    """The mutants of ``source`` made by ``operators`` (names from ``OPERATORS``; all when None).

    Deterministic: the same text and operators give the same mutants in the same order. Mutants
    whose text equals the original or an earlier mutant's are left out. Raises ``SyntaxError``
    when ``source`` does not parse and ``ValueError`` naming an unknown operator."""
    names = list(OPERATORS) if operators is None else list(operators)
    unknown = [n for n in names if n not in OPERATORS]
    if unknown:
        raise ValueError(f"unknown mutation operator(s) {', '.join(unknown)}; known: {', '.join(OPERATORS)}")
    src = _Source(source)
    tree = ast.parse(source)
    parents = _parents(tree)
    lines = source.splitlines()
    found: list[tuple[int, int, int, str, str, str]] = []  # line, col, order, operator, description, text
    seen = {source}
    for node in _mutable_nodes(tree):
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
