"""Mutation operators: each models a classic slip of this material.

An operator is a function ``(node, source) -> Iterator[Mutation]`` over one ``ast`` node: a
boundary ``<`` for ``<=``, an off-by-one index, float32 where float64 was due, floor for ceil, a
dropped ``raise``, an in-place call that discards its result, a reversed loop, min for max, ...
A ``Mutation`` names the node to replace, its replacement, and candidate texts for the
replaced characters (``inferprep.mutate.mutants`` picks the first that parses to exactly the
replacement). ``OPERATORS`` maps each operator's name to its function, in the order their
mutants are listed at one spot.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Callable, Iterator

__all__ = ["OPERATORS", "Mutation", "Source", "dotted"]


@dataclass
class Mutation:
    """One edit an operator proposes: replace ``target`` by ``new``."""

    target: ast.AST          # the node replaced
    new: ast.AST             # what replaces it
    description: str
    texts: tuple[str, ...]   # candidate replacement texts for the target's characters, best first
    token_edit: tuple[int, int, str, str] | None = None  # (start, end) byte gap, old token, new token


Operator = Callable[[ast.AST, "Source"], Iterator[Mutation]]


class Source:
    """The source as UTF-8 bytes (``ast`` offsets are byte offsets) and segment helpers."""

    def __init__(self, text: str, tree: ast.AST | None = None):
        self.text = text
        self.data = text.encode("utf-8")
        self.order_free = order_free_comprehensions(tree) if tree is not None else set()
        """ids of comprehensions whose order cannot change the result (see ``op_reversed``)."""
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
              token_edit: tuple[int, int, str, str] | None = None) -> Mutation:
    return Mutation(target, new, description, tuple(texts), token_edit)


def _replaced(node: ast.AST, **fields) -> ast.AST:
    new = copy.copy(node)
    for k, v in fields.items():
        setattr(new, k, v)
    return new


def dotted(node: ast.AST) -> str:
    """``torch.float64`` -> "torch.float64"; "" for anything that is not a dotted name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _gap_edit(src: Source, left: ast.AST, right: ast.AST, old: str, new: str) -> tuple[int, int, str, str]:
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


def _plus_minus(node: ast.expr, src: Source, what: str) -> Iterator[Mutation]:
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
    if isinstance(node, ast.Call) and dotted(node.func) == "range" and not node.keywords:
        for arg in node.args[:2]:
            if not isinstance(arg, (ast.Constant, ast.Starred)):
                yield from _plus_minus(arg, src, "range bound")


# Type checks and attribute access (a swap only raises), and symmetric functions (a swap is equivalent).
_NO_SWAP = {"isinstance", "issubclass", "getattr", "setattr", "hasattr", "print", "super", "min", "max",
            "minimum", "maximum", "fmin", "fmax", "gcd", "lcm", "hypot", "isclose", "allclose", "equal", "eq",
            "ne", "add", "mul", "logical_and", "logical_or", "logical_xor"}


def op_swap_args(node, src):
    """Swapped neighbouring positional arguments of a call: ``f(a, b)`` -> ``f(b, a)``."""
    if not isinstance(node, ast.Call) or dotted(node.func).split(".")[-1] in _NO_SWAP:
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


def _rename_attr(node: ast.Attribute, src: Source, new_attr: str) -> Mutation:
    base = src.segment(node.value)
    return _mutation(node, _replaced(node, attr=new_attr), f"`.{node.attr}` -> `.{new_attr}`",
                     f"{base}.{new_attr}", f"({base}).{new_attr}")


def op_dtype(node, src):
    """Lower or swapped precision: ``torch.float64`` -> ``torch.float32``, float32 -> bfloat16,
    bfloat16 <-> float16, int64 -> int32, e4m3 <-> e5m2; ``.double()`` -> ``.float()``, ..."""
    if isinstance(node, ast.Attribute) and dotted(node.value) in _DTYPE_MODULES and node.attr in _DTYPES:
        if node.attr == "float" and dotted(node.value) != "torch":
            return
        yield _rename_attr(node, src, _DTYPES[node.attr])
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
          and not node.keywords and node.func.attr in _DTYPE_METHODS and dotted(node.func.value) not in _DTYPE_MODULES):
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
            and dotted(f.value) not in ("copy", "torch", "np", "numpy"):
        t = src.segment(f.value)
        yield _mutation(node, f.value, f"`.{f.attr}()` dropped", t, f"({t})")
    elif dotted(f) in ("copy.copy", "copy.deepcopy") and len(node.args) == 1:
        t = src.segment(node.args[0])
        yield _mutation(node, node.args[0], f"`{dotted(f)}(...)` dropped", t, f"({t})")


_ITERABLE = (ast.Name, ast.Attribute, ast.Subscript, ast.List, ast.Tuple)


# Consumers whose result does not depend on the order of their items (without a ``key``: with
# one, ties go to the first item, and reversing is a real mistake).
_ORDER_FREE = {"sum", "math.fsum", "max", "min", "any", "all", "set", "frozenset", "sorted", "len", "dict"}


def order_free_comprehensions(tree: ast.AST) -> set[int]:
    """ids of the comprehensions of set and dict comprehensions, and of a generator or list
    comprehension passed alone to an order-free consumer (``sum(x for x in xs)``)."""
    out: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.SetComp, ast.DictComp)):
            out.update(id(g) for g in n.generators)
        elif (isinstance(n, ast.Call) and dotted(n.func) in _ORDER_FREE and len(n.args) == 1
              and not any(kw.arg == "key" for kw in n.keywords)
              and isinstance(n.args[0], (ast.GeneratorExp, ast.ListComp))):
            out.update(id(g) for g in n.args[0].generators)
    return out


def _changes_state(body: list[ast.stmt]) -> bool:
    """Can the order of this loop's iterations matter? Not when its body only checks (an ``if``
    that raises, a call of a plain function such as ``_check(name, v)``): validation loops raise
    the same exception type in any order. Any assignment, return, yield, break or method call
    (``out.append(x)``) may depend on the order."""
    def walk(n: ast.AST):
        if isinstance(n, ast.Raise):
            return
        yield n
        for c in ast.iter_child_nodes(n):
            yield from walk(c)
    state = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.Return, ast.Yield, ast.YieldFrom,
             ast.Break, ast.Delete)
    return any(isinstance(n, state) or isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               for stmt in body for n in walk(stmt))


def op_reversed(node, src):
    """Reversed iteration: ``reversed(x)`` -> ``x``, ``for v in x`` -> ``for v in reversed(x)``
    (not where the order cannot matter: a loop variable ``_``, a loop that only validates, a
    comprehension summed or maxed), ``x[::-1]`` -> ``x``, and ``sorted``'s ``reverse`` flipped."""
    if isinstance(node, ast.Call) and dotted(node.func) == "reversed" and len(node.args) == 1:
        t = src.segment(node.args[0])
        yield _mutation(node, node.args[0], "`reversed(...)` dropped", t)
    elif isinstance(node, (ast.For, ast.comprehension)):
        it = node.iter
        if isinstance(node.target, ast.Name) and node.target.id == "_" or id(node) in src.order_free:
            return
        if isinstance(node, ast.For) and not _changes_state(node.body):
            return
        if isinstance(it, _ITERABLE) or (isinstance(it, ast.Call) and dotted(it.func) in ("range", "sorted", "list")):
            t = src.segment(it)
            new = ast.Call(ast.Name("reversed", ast.Load()), [it], [])
            yield _mutation(it, new, f"`{t}` iterated in reverse", f"reversed({t})")
    elif (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.lower is None
          and node.slice.upper is None and isinstance(node.slice.step, ast.UnaryOp)
          and isinstance(node.slice.step.operand, ast.Constant) and node.slice.step.operand.value == 1):
        t = src.segment(node.value)
        yield _mutation(node, node.value, "`[::-1]` dropped", t, f"({t})")
    elif isinstance(node, ast.Call) and (dotted(node.func) == "sorted" or
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


