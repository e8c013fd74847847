"""The child's side of ``Grading.launch``: run the submission's ``@triton.jit`` kernel on the
grader's buffers, with the grader's grid and block sizes.

A Triton exercise's submission provides a kernel, not a function that returns an answer: the
grader lays out every input and output itself (``inferprep.grading.kernels``: flat buffers with
guard bands, row gaps, strides), sends them with a ``launch`` frame, and this module

1. looks up the kernel and requires a real Triton kernel object, of exactly Triton's class
   (``JITFunction``, or ``InterpretedFunction`` under ``TRITON_INTERPRET=1``; the classes are
   taken before the submission loads, and a subclass or an instance attribute that shadows one
   of their methods is refused), so a plain Python function cannot stand in for one;
2. requires Triton itself to be as it was before the submission loaded: every function, class
   and class attribute of the loaded ``triton`` modules is compared by identity with a snapshot
   (taken in ``prepare``, and after each compiled launch), so a submission that patches the
   interpreter's launcher or ``tl.*`` to compute the answer in Python is refused;
3. reads the kernel's body (and of every @triton.jit function it calls) and resolves each free
   name and attribute chain: anything outside Triton's language (torch, numpy, the submission's
   own Python) is refused, as Triton's compiler refuses it on a GPU, although the CPU interpreter
   would run it. "Triton's language" is the set of objects the ``triton.language`` modules held
   before the submission loaded, compared by identity (a function whose ``__module__`` claims
   ``triton.language`` is not one of them). (Compiling to Triton IR in this process is not an
   option: the interpreter needs triton.language's own functions in their interpreted form, the
   compiler in their compiled one.) Under the interpreter what runs is the body rewritten from
   the same source text (``InterpretedFunction.rewrite``), whose cache is emptied before each
   launch;
4. launches ``kernel[grid](*args, **constexprs)`` on views of the buffers and returns every
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
_LANGUAGE: dict[int, object] = {}
"""Triton's language before the submission loaded: id -> object for the ``triton`` module, the
``triton.language`` modules, their attributes and their classes' attributes (held, so that an id
is never reused)."""
_SNAPSHOT: dict[tuple[str, str], object] = {}
"""Triton's runtime as last seen by this module: (module or class, attribute) -> object."""
_DEVICE = "cpu"
_CONSTEXPR: type | None = None
_DTYPE: type | None = None


def prepare(device: str, workdir: str) -> None:
    """Ready this child for Triton kernels: the interpreter on CPU, triton's cache and home in the
    private working folder, triton imported and its kernel classes captured. Call before the
    submission loads (and before the rlimits, so that triton's own mappings are not counted).
    Raises ImportError when triton is not installed (the catalog says so before a grading)."""
    global _KERNEL_TYPES, _DEVICE
    _DEVICE = device
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    os.environ["TRITON_HOME"] = workdir
    os.environ["TRITON_CACHE_DIR"] = os.path.join(workdir, ".triton", "cache")
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # today's default, without its warning
    # tl.dot of float32 operands in full float32 on a GPU, as the interpreter computes it: Triton's
    # GPU default is TF32 (a 10-bit mantissa, relative errors near 1e-3), which the float32
    # tolerances of the Triton graders (1e-4) would fail for a correct kernel
    os.environ["TRITON_F32_DEFAULT"] = "ieee"
    import triton  # noqa: F401
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    _KERNEL_TYPES = (JITFunction, InterpretedFunction)
    _capture()


def _capture() -> None:
    """Record Triton's language and runtime as they are now (before the submission loads)."""
    global _CONSTEXPR, _DTYPE, _LANGUAGE, _SNAPSHOT
    import triton.language as tl

    _CONSTEXPR, _DTYPE = tl.constexpr, tl.dtype
    objs: dict[int, object] = {}
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "triton.language" or name.startswith("triton.language.")):
            continue
        objs[id(mod)] = mod
        for value in list(vars(mod).values()):
            objs[id(value)] = value
            if isinstance(value, type) and str(value.__module__).startswith("triton."):
                for member in list(vars(value).values()):
                    objs[id(member)] = member
                    inner = getattr(member, "__func__", None)  # a staticmethod's or classmethod's function
                    if inner is not None:
                        objs[id(inner)] = inner
    objs[id(sys.modules["triton"])] = sys.modules["triton"]
    _LANGUAGE = objs
    _SNAPSHOT = _runtime_state()


def _runtime_state() -> dict[tuple[str, str], object]:
    """Every attribute of the loaded ``triton`` modules that is a function, class or module (but
    triton.language.core's), and every attribute of the classes they define: (owner's name,
    attribute) -> object."""
    state: dict[tuple[str, str], object] = {}
    classes: dict[int, type] = {}
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "triton" or name.startswith("triton.")):
            continue
        for key, value in list(vars(mod).items()):
            # triton.language.core's functions are rebound by the interpreter at each launch; a
            # kernel reaches them by name, and _triton_object checks those names by identity
            if (callable(value) or inspect.ismodule(value)) and name != "triton.language.core":
                state[(name, key)] = value
            if isinstance(value, type) and str(value.__module__).startswith("triton"):
                classes[id(value)] = value
    for cls in classes.values():
        owner = f"{cls.__module__}.{cls.__qualname__}"
        for key, value in list(vars(cls).items()):
            state[(owner, key)] = value
    return state


def _check_runtime() -> None:
    """Raise TypeError when an attribute of Triton's runtime or language differs from the last
    snapshot (replaced, removed, or a class attribute added): the submission patched Triton."""
    now = _runtime_state()
    for key, value in _SNAPSHOT.items():
        if now.get(key, _MISSING) is not value:
            raise TypeError(f"the submission changed Triton itself ({key[0]}.{key[1]}): the kernel must run "
                            "on Triton as installed")
    classes = {owner for owner, _ in _SNAPSHOT} - {n for n, m in sys.modules.items() if m is not None}
    for key in now.keys() - _SNAPSHOT.keys():
        value = now[key]
        if key[0] in classes and (callable(value) or hasattr(value, "__get__")) and value is not _inherited(key):
            # a method added where the class inherited one (the interpreter's own restore puts the
            # inherited method back into the class's dict: that is the same object)
            raise TypeError(f"the submission changed Triton itself ({key[0]}.{key[1]} added): the kernel "
                            "must run on Triton as installed")


def _inherited(key: tuple[str, str]):
    """What class ``key[0]`` (module.qualname) would inherit as ``key[1]`` from its bases."""
    module, _, qualname = key[0].rpartition(".")
    cls = sys.modules.get(module)
    for part in qualname.split("."):
        cls = getattr(cls, part, None)
    for base in getattr(cls, "__mro__", ())[1:]:
        if key[1] in vars(base):
            return vars(base)[key[1]]
    return _MISSING


_MISSING = object()


def _check_kernel_object(name: str, obj) -> None:
    """Refuse a kernel object that is not exactly Triton's (a subclass, or an instance attribute
    that shadows a method of its class, such as ``rewrite`` or ``run``)."""
    if type(obj) not in _KERNEL_TYPES:
        raise TypeError(f"{name} must be a @triton.jit kernel, not {type(obj).__name__} (decorate the "
                        "function with @triton.jit; the grader launches it with its own grid)")
    for inst in (obj, getattr(obj, "rewriter", None)):
        if inst is None:
            continue
        shadowed = sorted(k for k in vars(inst) if callable(getattr(type(inst), k, None)))
        if shadowed:
            raise TypeError(f"{name}: the kernel object's {shadowed[0]} was replaced: the kernel must run "
                            "on Triton as installed")
    rewriter = getattr(obj, "rewriter", None)
    if rewriter is not None and (getattr(rewriter, "fn", None) is not obj.fn
                                 or type(rewriter).__module__ != "triton.runtime.interpreter"):
        raise TypeError(f"{name}: the kernel object's rewriter was replaced: the kernel must run on Triton "
                        "as installed")


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
    """Whether ``obj`` belongs to Triton's language: one of the objects the triton.language modules
    held before the submission loaded (by identity), a plain number, a Triton kernel (checked in
    turn), a dtype, or a constexpr holding one of these."""
    if type(obj) in _KERNEL_TYPES:
        return True
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return True
    if _LANGUAGE.get(id(obj)) is obj:
        return True
    if inspect.ismethod(obj):
        return _triton_object(obj.__func__) and _triton_object(obj.__self__)
    if _CONSTEXPR is not None and type(obj) is _CONSTEXPR:
        return _triton_object(obj.value)
    if _DTYPE is not None and isinstance(obj, _DTYPE):
        return _LANGUAGE.get(id(type(obj))) is type(obj)
    return False


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
            if type(obj) in _KERNEL_TYPES and _LANGUAGE.get(id(obj)) is not obj:
                _check_kernel_object(name, obj)
                _check_body(name, obj.fn, seen)  # the submission's own helper (triton's are trusted)


_LOCAL = object()


def launch(module, msg: dict) -> list:
    """Run ``module.<msg["kernel"]>[msg["grid"]](*args, **msg["constexprs"])``; returns the tensor
    arguments' whole buffers in argument order. Raises TypeError for a kernel that is not a
    Triton kernel or does not compile, ValueError for a malformed grid."""
    if not _KERNEL_TYPES:
        raise RuntimeError("this exercise's child was not prepared for Triton kernels")
    global _SNAPSHOT
    name = str(msg.get("kernel"))
    kernel = getattr(module, name, None)
    _check_kernel_object(name, kernel)
    _check_runtime()
    grid = tuple(int(x) for x in msg.get("grid", ()))
    if not 1 <= len(grid) <= 3 or min(grid) < 0:
        raise ValueError(f"malformed grid {grid}")
    constexprs = dict(msg.get("constexprs") or {})
    args = [_view(a) for a in msg.get("args", ())]
    _check_body(name, kernel.fn, set())
    rewritten = getattr(type(kernel), "rewritten_fn", None)
    if isinstance(rewritten, dict):
        rewritten.clear()  # the interpreter rewrites each kernel from the source just checked
    if min(grid) > 0:
        kernel[grid](*args, **constexprs)
    if _DEVICE != "cpu":
        # what a compiled launch changes in Triton (what it imports, caches) is Triton's own. The
        # interpreter undoes its patches itself, and under it nothing runs here after the kernel:
        # an unmasked store may have scribbled over this process's heap (on CUDA it hits the GPU)
        _SNAPSHOT = _runtime_state()
    return [a["buffer"] for a in msg.get("args", ()) if isinstance(a, dict) and "buffer" in a]
