"""The parent's read of a Triton submission's source, before any of it runs (``judge.grade``, the perf
stage): the file may hold only what a Triton kernel file needs, so that its answer cannot come from
torch computed around the kernel.

Why in the parent: everything in the child, the launcher (``triton_launch``) and its check of the
kernel bodies included, runs in the submission's own process, which can patch it before the first
launch (replace ``triton_launch.launch``, swap the kernel object's class, forge a function's
``__module__`` so it passes for ``triton.language``, reach ``__globals__`` through a value's
dunders inside a kernel that Triton's CPU interpreter runs as Python). A red-team review passed
triton-softmax with ``torch.softmax`` each of those ways. This check reads the text the child will
run, in the process that decides the verdict, so nothing the submission does can change it.

What a Triton exercise's file may contain (an allow-list, not a deny-list):

- at the top level: a docstring; ``import triton``, ``import triton.language as tl``, ``import
  math``, ``from triton/triton.language/math/__future__ import <public names>`` (not ``typing``,
  whose ``get_type_hints`` evaluates strings); function
  definitions, undecorated or decorated with ``triton.jit`` (or ``triton.jit(<constants>)``);
  assignments of constants and expressions built from the names allowed below;
- in every expression, anywhere: names the file defines (its functions, constants, parameters and
  locals), the imported modules and names, and the built-ins of ``ALLOWED_BUILTINS``; attributes
  only ``triton.<TRITON_ATTRS>``, ``tl.<a public name of triton.language that is not a module>`` (``tl.math.<...>`` too),
  ``math.<public name>``, or, on any other value, one of ``VALUE_ATTRS`` (what Triton's tensors,
  dtypes and constexprs offer a kernel: ``x.dtype``, ``ptr.dtype.element_ty``, ``x.to(...)``);
  never a name or attribute that starts with an underscore (dunders: ``__class__``,
  ``__globals__``, ``__builtins__``), never an attribute or subscript of a module assigned or
  deleted;
- no class, lambda, ``global``/``nonlocal``, ``with``, ``try``, ``match``, ``del``, async code, imports
  inside functions, nested functions, or expression statements at the top level other than the docstring.

A file that breaks a rule is an invalid submission, with the rule and the line. An honest kernel
file (the four references, the stubs, the known-wrong variants that are not about this) needs
none of what is refused; Triton's compiler refuses most of it on a GPU anyway.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import re

__all__ = ["check", "ALLOWED_BUILTINS", "TRITON_ATTRS", "VALUE_ATTRS"]

ALLOWED_MODULES = {"triton", "triton.language", "math", "__future__"}
"""(Not ``typing``: ``typing.get_type_hints`` evaluates strings.)"""
ALLOWED_BUILTINS = frozenset({
    "range", "min", "max", "float", "int", "bool", "len", "abs", "tuple", "list", "dict", "print", "isinstance",
    "sum", "zip", "enumerate", "round", "divmod", "pow", "sorted", "reversed", "any", "all", "str",
    "ValueError", "TypeError", "AssertionError", "NotImplementedError", "RuntimeError", "IndexError",
})
"""Built-in names a Triton kernel file may use (values and arithmetic; nothing that reaches objects,
attributes, frames, code or files: no getattr, vars, globals, type, object, eval, exec, open)."""
TRITON_ATTRS = frozenset({"jit", "cdiv", "next_power_of_2", "language", "constexpr"})
"""Attributes of the ``triton`` module a kernel file may use."""
VALUE_ATTRS = frozenset({
    # tl.tensor's methods and attributes, as a kernel writes them
    "dtype", "shape", "type", "numel", "T", "to", "reshape", "view", "trans", "permute", "broadcast_to",
    "expand_dims", "ravel", "split", "sum", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "sort", "flip",
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sin", "cos", "sigmoid", "softmax", "erf", "floor",
    "ceil", "cdiv", "logical_and", "logical_or", "reduce", "associative_scan", "gather", "histogram", "xor_sum",
    "reduce_or", "cast", "item", "advance", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas",
    "atomic_xchg", "atomic_and", "atomic_or", "atomic_xor",
    # dtypes, pointer and block types, constexprs
    "element_ty", "value", "name", "scalar", "primitive_bitwidth", "int_bitwidth", "int_signedness",
    "fp_mantissa_width", "exponent_bias", "address_space", "nbytes", "kind", "is_ptr", "is_block", "is_int",
    "is_int_signed", "is_int_unsigned", "is_floating", "is_fp16", "is_fp32", "is_fp64", "is_bf16", "is_bool",
    "is_fp8", "with_element_ty", "get_block_shapes",
    # a dict's, for block_sizes
    "get", "items", "keys", "values",
})
"""Attributes any other value may be asked for: Triton's tensor, dtype and constexpr vocabulary
(never ``handle``, through which the interpreter's numpy data, and numpy's ctypes, would be in reach)."""
_BUILTIN_NAMES = frozenset(dir(builtins))
_ANNOTATION_TEXT = re.compile(r"[A-Za-z0-9_. *]*")
"""What a string annotation may say (``"tl.constexpr"``, ``"*fp32"``): Triton parses some annotation
strings itself (a ``tensordesc<...>`` one goes through ``eval``)."""
_MODULE_ATTRS_OF_TL = frozenset({"core", "extra", "math", "random", "standard", "target_info", "semantic"})


@functools.lru_cache(maxsize=2)
def _tl_names(module: str = "triton.language") -> frozenset[str] | None:
    """Public names of ``module`` (triton.language or triton.language.math) that are not modules;
    None when triton cannot be imported (a Triton exercise is then unavailable, and only the static
    module names are refused)."""
    try:
        mod = importlib.import_module(module)
    except Exception:  # noqa: BLE001
        return None
    def language(obj) -> bool:   # not a module, and Triton's own (tl.math re-exports functools.wraps)
        if inspect.ismodule(obj):
            return False
        owner = getattr(obj, "__module__", None) or type(obj).__module__
        return isinstance(obj, (int, float, bool, str)) or str(owner).startswith("triton")

    return frozenset(n for n in dir(mod) if not n.startswith("_") and language(getattr(mod, n)))


class _Refused(Exception):
    def __init__(self, node: ast.AST | None, why: str):
        line = getattr(node, "lineno", None)
        super().__init__(f"line {line}: {why}" if line else why)


_FORBIDDEN_NODES = (ast.ClassDef, ast.Lambda, ast.Global, ast.Nonlocal, ast.With, ast.AsyncWith, ast.Try,
                    ast.Delete, ast.AsyncFunctionDef, ast.AsyncFor, ast.Await, ast.Yield, ast.YieldFrom,
                    ast.Import, ast.ImportFrom)
for _name in ("TryStar", "Match", "TypeAlias"):   # newer statements no kernel file needs
    if hasattr(ast, _name):
        _FORBIDDEN_NODES += (getattr(ast, _name),)


def _what(node: ast.AST) -> str:
    return {ast.ClassDef: "a class", ast.Lambda: "a lambda", ast.Global: "a global statement",
            ast.Nonlocal: "a nonlocal statement", ast.With: "a with statement", ast.Try: "a try statement",
            ast.Delete: "a del statement", ast.Import: "an import inside a function",
            ast.ImportFrom: "an import inside a function"}.get(type(node), f"{type(node).__name__}")


class _Checker:
    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.modules: dict[str, str] = {}     # local name -> module ("triton", "triton.language", "math", ...)
        self.defined: set[str] = set()        # top-level functions, constants, imported names

    def _bind(self, node: ast.AST, name: str) -> None:
        """A name the file binds (anywhere): never a built-in's, so that every use of a built-in's
        name is the built-in (a top-level ``getattr = 0`` after ``X = getattr(...)`` would otherwise
        pass for the file's own name while the first use reads the real one)."""
        self._name_ok(node, name)
        if name in _BUILTIN_NAMES:
            raise _Refused(node, f"the name {name} is a built-in's: choose another name")

    def run(self) -> None:
        body = self.tree.body
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.name not in ALLOWED_MODULES:
                        raise _Refused(stmt, f"import {a.name}: a Triton kernel file may import only triton, "
                                       "triton.language and math (and from __future__)")
                    if a.asname is None and a.name == "triton.language":
                        self.modules["triton"] = self.modules.get("triton", "triton")
                    self.modules[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(stmt, ast.ImportFrom):
                mod = stmt.module or ""
                if stmt.level or mod not in ALLOWED_MODULES:
                    raise _Refused(stmt, f"from {'.' * stmt.level}{mod} import ...: a Triton kernel file may import "
                                   "only from triton, triton.language and math")
                for a in stmt.names:
                    if a.name == "*" or a.name.startswith("_"):
                        raise _Refused(stmt, f"from {mod} import {a.name}: import public names one by one")
                    if mod == "triton" and a.name not in TRITON_ATTRS:
                        raise _Refused(stmt, f"from triton import {a.name}: only {', '.join(sorted(TRITON_ATTRS))}")
                    if mod == "triton" and a.name == "language":
                        self.modules[a.asname or a.name] = "triton.language"
                    elif mod == "triton.language" and (a.name in _MODULE_ATTRS_OF_TL or (
                            _tl_names() is not None and a.name not in _tl_names())):
                        raise _Refused(stmt, f"from triton.language import {a.name}: not a name of the kernel "
                                       "language")
                    elif mod == "math" and inspect.ismodule(
                            getattr(importlib.import_module(mod), a.name, None)):
                        raise _Refused(stmt, f"from {mod} import {a.name}: a module")
                    else:
                        self.defined.add(a.asname or a.name)
            elif isinstance(stmt, ast.FunctionDef):
                self.defined.add(stmt.name)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.defined.add(n.id)
                        elif isinstance(n, (ast.Attribute, ast.Subscript)) and n is t:
                            raise _Refused(stmt, "an assignment to an attribute or an item at the top level "
                                           "(a kernel file defines names; it does not change modules)")
            elif (i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                  and isinstance(stmt.value.value, str)):
                pass
            elif isinstance(stmt, ast.If) and self._is_main_guard(stmt.test):
                raise _Refused(stmt, "an if __name__ == '__main__' block: the grader launches the kernel")
            else:
                raise _Refused(stmt, f"a top-level {type(stmt).__name__.lower()} statement: a Triton kernel file "
                               "holds imports, functions and constants only")
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                self._bind(n, n.id)
            elif isinstance(n, ast.arg):
                self._bind(n, n.arg)
            elif isinstance(n, ast.FunctionDef):
                self._bind(n, n.name)
            elif isinstance(n, ast.alias):
                self._bind(n, (n.asname or n.name).split(".")[0])
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef):
                self._function(stmt, set())
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                if isinstance(stmt, ast.AnnAssign):
                    self._annotation(stmt.annotation)
                if stmt.value is not None:
                    self._expr(stmt.value, set())
                for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                    self._expr(t, set())

    @staticmethod
    def _is_main_guard(test: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(test))

    def _decorator(self, d: ast.AST) -> None:
        target = d.func if isinstance(d, ast.Call) else d
        ok = (isinstance(target, ast.Attribute) and target.attr == "jit" and isinstance(target.value, ast.Name)
              and self.modules.get(target.value.id) == "triton") or (isinstance(target, ast.Name) and target.id == "jit"
                                                                     and "jit" in self.defined)
        if not ok:
            raise _Refused(d, f"the decorator {ast.unparse(d)}: a function is plain or @triton.jit")
        if isinstance(d, ast.Call):
            for v in [*d.args, *(k.value for k in d.keywords)]:
                if not isinstance(v, ast.Constant):
                    raise _Refused(d, "@triton.jit(...) takes constant arguments only")

    def _function(self, fn: ast.FunctionDef, outer: set[str]) -> None:
        for d in fn.decorator_list:
            self._decorator(d)
        args = fn.args
        local = set(outer)
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, *([args.vararg] if args.vararg else []),
                  *([args.kwarg] if args.kwarg else [])]:
            self._name_ok(a, a.arg)
            local.add(a.arg)
            if a.annotation is not None:
                self._annotation(a.annotation)
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self._expr(default, set())
        if fn.returns is not None:
            self._annotation(fn.returns)
        for stmt in fn.body:
            for n in ast.walk(stmt):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    local.add(n.id)
                elif isinstance(n, ast.arg):
                    local.add(n.arg)
        for stmt in fn.body:
            for n in ast.walk(stmt):
                if isinstance(n, ast.FunctionDef):
                    raise _Refused(n, f"a function inside {fn.name}: define helpers at the top level")
                if isinstance(n, _FORBIDDEN_NODES):
                    raise _Refused(n, f"{_what(n)} in {fn.name}: not part of a Triton kernel file")
            self._expr(stmt, local)

    def _annotation(self, node: ast.AST) -> None:
        for n in ast.walk(node):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and (
                    not _ANNOTATION_TEXT.fullmatch(n.value) or "__" in n.value):
                raise _Refused(n, f"the annotation {n.value!r}: a string annotation names a type "
                               "(\"tl.constexpr\", \"*fp32\") and nothing else")
        self._expr(node, set())

    def _name_ok(self, node: ast.AST, name: str) -> None:
        if name.startswith("__"):
            raise _Refused(node, f"the name {name}: names with a double underscore reach Python's internals")

    def _expr(self, tree: ast.AST, local: set[str]) -> None:
        local = local | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for n in ast.walk(tree):
            if isinstance(n, _FORBIDDEN_NODES):
                raise _Refused(n, f"{_what(n)}: not part of a Triton kernel file")
            if isinstance(n, ast.Name):
                self._name_ok(n, n.id)
                if isinstance(n.ctx, ast.Load) and not (n.id in local or n.id in self.defined
                                                        or n.id in self.modules or n.id in ALLOWED_BUILTINS):
                    raise _Refused(n, f"the name {n.id!r}: a Triton kernel file may use only its own names, "
                                   "triton, triton.language, math and the built-ins "
                                   f"{', '.join(sorted(ALLOWED_BUILTINS))}")
                if isinstance(n.ctx, ast.Store) and n.id in self.modules:
                    raise _Refused(n, f"an assignment to {n.id}, an imported module")
            elif isinstance(n, ast.Attribute):
                self._attribute(n, local)
            elif isinstance(n, ast.Subscript) and not isinstance(n.ctx, ast.Load):
                base = n.value
                if isinstance(base, ast.Name) and (base.id in self.modules or base.id in self.defined) \
                        and base.id not in local:
                    raise _Refused(n, f"an assignment to an item of {base.id}")

    def _module_of(self, node: ast.AST, local: set[str]) -> str | None:
        """The module ``node`` names (``tl`` -> triton.language, ``triton.language`` too, ``tl.math``
        -> triton.language.math), else None."""
        if isinstance(node, ast.Name) and node.id not in local:
            return self.modules.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._module_of(node.value, local)
            if node.attr == "language" and base == "triton":
                return "triton.language"
            if node.attr == "math" and base == "triton.language":
                return "triton.language.math"
        return None

    def _attribute(self, n: ast.Attribute, local: set[str]) -> None:
        if n.attr.startswith("_"):
            raise _Refused(n, f"the attribute {ast.unparse(n)}: attributes starting with an underscore reach "
                           "Python's or Triton's internals")
        if not isinstance(n.ctx, ast.Load):
            raise _Refused(n, f"an assignment to the attribute {ast.unparse(n)}")
        mod = self._module_of(n.value, local)
        if mod == "triton":
            if n.attr not in TRITON_ATTRS:
                raise _Refused(n, f"triton.{n.attr}: a kernel file may use triton.{', triton.'.join(sorted(TRITON_ATTRS))}")
        elif mod == "triton.language" and n.attr == "math":
            pass  # tl.math: the kernel language's math functions (checked on the next attribute)
        elif mod in ("triton.language", "triton.language.math"):
            names = _tl_names(mod)
            if n.attr in _MODULE_ATTRS_OF_TL or (names is not None and n.attr not in names):
                raise _Refused(n, f"{ast.unparse(n)}: not a name of the kernel language (triton.language)")
        elif mod == "math":
            if inspect.ismodule(getattr(importlib.import_module(mod), n.attr, None)):
                raise _Refused(n, f"{ast.unparse(n)}: a module, not a function of {mod}")
        elif mod is not None:
            raise _Refused(n, f"{ast.unparse(n)}: an attribute of {mod}")
        elif n.attr not in VALUE_ATTRS:
            raise _Refused(n, f"the attribute .{n.attr} ({ast.unparse(n)}): a kernel file may ask a value only for "
                           "what Triton's tensors, dtypes and constexprs offer (.dtype, .element_ty, .to(), ...)")


def check(code: str) -> str | None:
    """Why ``code`` is not an acceptable Triton kernel file (the rule broken and its line), or None
    when it is (or does not parse: the child then reports the syntax error as usual)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    try:
        _Checker(tree).run()
    except _Refused as e:
        return (f"{e}. Only a kernel file's content is accepted here: imports of triton, triton.language "
                "and math, @triton.jit kernels, plain helper functions and constants (docs/security.md).")
    return None
