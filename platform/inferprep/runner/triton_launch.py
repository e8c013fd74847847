"""The child's side of ``Grading.launch``: run the submission's ``@triton.jit`` kernel on the
grader's buffers, with the grader's grid and block sizes.

A Triton exercise's submission provides a kernel, not a function that returns an answer: the
grader lays out every input and output itself (``inferprep.grading.kernels``: flat buffers with
guard bands, row gaps, strides), sends them with a ``launch`` frame, and this module

1. looks up the kernel and requires a real Triton kernel object (``JITFunction``, or
   ``InterpretedFunction`` under ``TRITON_INTERPRET=1``; the classes are taken before the
   submission loads), so a plain Python function cannot stand in for one;
2. reads the kernel's body (and of every @triton.jit function it calls) and resolves each free
   name and attribute chain: anything outside Triton's language (torch, numpy, the submission's
   own Python) is refused, as Triton's compiler refuses it on a GPU, although the CPU interpreter
   would run it. (Compiling to Triton IR in this process is not an option: the interpreter needs
   triton.language's own functions in their interpreted form, the compiler in their compiled one);
3. launches ``kernel[grid](*args, **constexprs)`` on views of the buffers and returns every
   buffer whole (guard bands included), so that the parent can see out-of-bounds stores and
   writes into inputs.

Like every check in the child this is a guard against shortcuts, not a boundary: the submission
runs in this process and can patch this module. The parent believes only the values it checks.

On CPU the kernel runs through Triton's interpreter (``prepare`` sets ``TRITON_INTERPRET=1``
before the submission's decorators run; the fork server may have imported triton already, which
is fine: triton reads the variable when ``@triton.jit`` runs). On CUDA it is compiled.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import sys
import textwrap

_KERNEL_TYPES: tuple[type, ...] = ()


def prepare(device: str, workdir: str) -> None:
    """Ready this child for Triton kernels: the interpreter on CPU, triton's cache and home in the
    private working folder, triton imported and its kernel classes captured. Call before the
    submission loads (and before the rlimits, so that triton's own mappings are not counted).
    Raises ImportError when triton is not installed (the catalog says so before a grading)."""
    global _KERNEL_TYPES
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    os.environ["TRITON_HOME"] = workdir
    os.environ["TRITON_CACHE_DIR"] = os.path.join(workdir, ".triton", "cache")
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # today's default, without its warning
    import triton  # noqa: F401
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    _KERNEL_TYPES = (JITFunction, InterpretedFunction)


def preload() -> None:
    """Import triton, when installed, in the warm pool's fork server, so that a Triton exercise's
    child does not pay for it (measured here: 0.15 s of CPU, 0.4-0.7 s of wall time on a loaded
    machine, per grading); other children pay nothing, the pages are shared. triton.language
    decorates its own functions at import for the interpreter or for the compiler, so a CPU pool's
    server imports it with ``TRITON_INTERPRET=1`` in its environment (``forkserver.WarmPool``)."""
    if importlib.util.find_spec("triton") is not None:
        import triton  # noqa: F401
        from triton.runtime import interpreter, jit  # noqa: F401


def _view(arg):
    """A grader's tensor argument (a flat buffer and its layout) as the strided view the kernel
    gets; any other argument (an int or float) as it is."""
    if isinstance(arg, dict) and "buffer" in arg:
        return arg["buffer"].as_strided(tuple(arg["shape"]), tuple(arg["stride"]), int(arg["offset"]))
    return arg


SAFE_BUILTINS = frozenset({"range", "min", "max", "float", "int", "bool", "len", "abs", "tuple", "isinstance",
                           "print", "True", "False", "None"})
"""Built-in names a kernel body may use (the ones Triton's code generator understands)."""


def _triton_object(obj) -> bool:
    """Whether ``obj`` belongs to Triton's language: the triton.language modules and what they
    define, a constexpr, a plain number, or another Triton kernel (checked in turn)."""
    if isinstance(obj, _KERNEL_TYPES):
        return True
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return True
    mod = obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", None) or type(obj).__module__
    return mod == "triton" and obj is sys.modules.get("triton") or str(mod).startswith("triton.language")


def _check_body(name: str, fn, seen: set) -> None:
    """Reject a kernel whose body reaches anything outside Triton's language (torch, numpy, the
    submission's own Python functions): Triton's compiler rejects those on a GPU, while the CPU
    interpreter would run them. Static: every free name and attribute chain of the body is
    resolved and must be a Triton object. Raises TypeError naming the first offender."""
    if fn in seen:
        return
    seen.add(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError) as e:
        raise TypeError(f"{name}: the kernel's source cannot be read ({e})") from None
    func = tree.body[0]
    local = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
    local |= {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    free = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))

    def resolve(node):
        if isinstance(node, ast.Name):
            if node.id in local:
                return _LOCAL
            if node.id in free:
                return free[node.id]
            if node.id in fn.__globals__:
                return fn.__globals__[node.id]
            if node.id in SAFE_BUILTINS:
                return _LOCAL
            raise TypeError(f"{name} uses {node.id!r}, which a Triton kernel cannot call")
        if isinstance(node, ast.Attribute):
            base = resolve(node.value)
            if base is _LOCAL or not (inspect.ismodule(base) or isinstance(base, type)):
                return _LOCAL  # an attribute of a value (x.dtype, ptr.dtype.element_ty): the compiler's business
            if node.attr.startswith("__"):
                raise TypeError(f"{name} reaches {ast.unparse(node)}, which a Triton kernel cannot use")
            return getattr(base, node.attr, _LOCAL)
        return _LOCAL

    body = [n for stmt in func.body for n in ast.walk(stmt)]  # not the decorators
    for node in body:
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            obj = resolve(node)
            if obj is _LOCAL:
                continue
            if not _triton_object(obj):
                what = getattr(obj, "__name__", type(obj).__name__)
                raise TypeError(f"{name} uses {ast.unparse(node)} ({what}): a kernel body may use only "
                                "triton.language and other @triton.jit functions, as on a GPU")
            if isinstance(obj, _KERNEL_TYPES) and not str(obj.fn.__module__).startswith("triton."):
                _check_body(name, obj.fn, seen)  # the submission's own helper (triton's are trusted)


_LOCAL = object()


def launch(module, msg: dict) -> list:
    """Run ``module.<msg["kernel"]>[msg["grid"]](*args, **msg["constexprs"])``; returns the tensor
    arguments' whole buffers in argument order. Raises TypeError for a kernel that is not a
    Triton kernel or does not compile, ValueError for a malformed grid."""
    if not _KERNEL_TYPES:
        raise RuntimeError("this exercise's child was not prepared for Triton kernels")
    name = str(msg.get("kernel"))
    kernel = getattr(module, name, None)
    if type(kernel) not in _KERNEL_TYPES:  # exactly: a subclass could launch anything from __getitem__
        raise TypeError(f"{name} must be a @triton.jit kernel, not {type(kernel).__name__} (decorate the "
                        "function with @triton.jit; the grader launches it with its own grid)")
    grid = tuple(int(x) for x in msg.get("grid", ()))
    if not 1 <= len(grid) <= 3 or min(grid) < 0:
        raise ValueError(f"malformed grid {grid}")
    constexprs = dict(msg.get("constexprs") or {})
    args = [_view(a) for a in msg.get("args", ())]
    _check_body(name, kernel.fn, set())
    if min(grid) > 0:
        kernel[grid](*args, **constexprs)
    return [a["buffer"] for a in msg.get("args", ()) if isinstance(a, dict) and "buffer" in a]
