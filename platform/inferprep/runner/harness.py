"""The child side of the judge: loads one submission and answers the grader's calls.

Started as ``python -I -u -c "...; from inferprep.runner.harness import main; main(FD)"`` inside
the sandbox (or forked from the warm pool's fork server, which calls ``serve``). It speaks the
protocol of ``wire.Channel`` over the connected socket ``FD``:

child -> parent  ``{"op": "hello", "seccomp", "scopes"}`` first, before the submission's code exists
                 here: until the parent has read it, any failure is the platform's, after it the
                 submission's (so no exit code or output of a submission reads as internal error).
                 A CUDA child (``INFERPREP_DEVICE=cuda``) reads the init below first, opens CUDA and
                 caps its GPU memory (``cuda.setup_child``), then says hello with ``"gpu"`` (the cap it set)
parent -> child  ``{"op": "init", "code", "entrypoints", "limits", "device", "hidden", "requires"}``
child -> parent  ``{"op": "ready"}`` | ``{"op": "invalid", "message"}`` | ``{"op": "raised", ...}``
parent -> child  ``{"op": "call", "fn", "args", "kwargs"}``
parent -> child  ``{"op": "launch", "kernel", "grid", "args", "constexprs"}``: run a Triton kernel of the
                 submission on the grader's buffers (``triton_launch``), answered like a call
parent -> child  ``{"op": "seed", "value"}``: ``torch.manual_seed(value)`` (torch's global generators,
                 CPU and CUDA), answered like a call that returns None
child -> parent  ``{"op": "result", "value", "cpu"}`` | ``{"op": "raised", "type", "mro", "message",
                 "traceback", "kind"}`` (kind: error | memory | output)
child -> parent  ``{"op": "pcall", "id", "proxy", "method", "args", "kwargs"}`` (proxy calls, any thread)
parent -> child  ``{"op": "preturn", "id", "value"}`` | ``{"op": "preturn", "id", "error", "type"}``
parent -> child  ``{"op": "scratch", "code"}``: run the user's snippet (a scratch run) with the loaded
                 submission bound to ``solution``; answered like a call that returns None
parent -> child  ``{"op": "stage", "inner": <a call or a launch>}``: the perf stage's next request,
                 its tensors masked (``perf_wire``); kept, not run; answered like a call of None
parent -> child  ``{"op": "timed", "key", "sketch", "echo", "like"}``: unmask the staged request
                 with ``key``, flush the L2 cache, synchronise the device, run it, synchronise again
                 (all streams), keep its outputs and answer with their ``perf_wire.digest``
                 (an int). ``echo``: the same without running anything, the outputs being empty
                 tensors of the ``like`` [shape, dtype] pairs (a launch: its buffers), the
                 overhead the parent subtracts (``runner.perf``)
parent -> child  ``{"op": "fetch"}``: the kept outputs (a call's value, a launch's buffers)
parent -> child  ``{"op": "exit"}``

Nothing here is trusted by the parent: the submission can monkeypatch this module. The parent
only ever believes values it checks itself.
"""

from __future__ import annotations

import builtins
import errno
import importlib.util
import itertools
import linecache
import os
import queue
import resource
import socket
import sys
import threading
import traceback
from pathlib import Path

import numpy  # noqa: F401  (warm: the submission should not pay for the import)
import torch

from . import cuda, perf_wire, triton_launch
from .wire import Channel, ProxyRef, WireError

SUBMISSION_FILE = "submission.py"
SHOWN_NAME = "solution.py"
"""The submission's file name in its tracebacks and syntax errors (never the sandbox's path)."""
SCRATCH_FILE = "scratch.py"
"""The name a scratch run's snippet has in tracebacks (it is never written to disk)."""


class ProxyError(Exception):
    """A proxied call the host refused (unknown method, wrong argument types, budget spent)."""


_EXC_TYPES = {"ValueError": ValueError, "TypeError": TypeError, "IndexError": IndexError,
              "KeyError": KeyError, "RuntimeError": RuntimeError, "TimeoutError": TimeoutError,
              "ProxyError": ProxyError, "MemoryError": MemoryError, "AssertionError": AssertionError}


class Proxy:
    """An object hosted by the grader. Methods cross the wire; ``attrs`` are plain values."""

    __slots__ = ("_ref", "_client")

    def __init__(self, ref: ProxyRef, client: "Client"):
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_client", client)

    def __getattr__(self, name: str):
        ref = object.__getattribute__(self, "_ref")
        if name in ref.attrs:
            return ref.attrs[name]
        if name in ref.methods:
            client = object.__getattribute__(self, "_client")
            return lambda *args, **kwargs: client.pcall(ref.id, name, args, kwargs)
        attrs = f"; attributes: {', '.join(ref.attrs)}" if ref.attrs else ""
        raise AttributeError(f"this object has no attribute {name!r}; methods: {', '.join(ref.methods)}{attrs}")

    def __setattr__(self, name, value):
        raise AttributeError("objects hosted by the grader are read-only")

    def __call__(self, *args, **kwargs):
        ref = object.__getattribute__(self, "_ref")
        if "__call__" not in ref.methods:
            raise TypeError("this object is not callable")
        return object.__getattribute__(self, "_client").pcall(ref.id, "__call__", args, kwargs)

    def __repr__(self) -> str:
        ref = object.__getattribute__(self, "_ref")
        return f"<hosted object #{ref.id}: {', '.join(ref.methods)}>"


class Client:
    """Routes frames: calls from the grader to the main thread, proxy results to their waiters."""

    def __init__(self, sock: socket.socket, device: str):
        self.chan = Channel(sock, proxy_hook=self._hook, proxy_factory=lambda ref: Proxy(ref, self), max_header=1 << 30,
                            device_map=lambda d: d)
        self.send_lock = threading.Lock()
        self.calls: queue.Queue = queue.Queue()
        self.waiters: dict[int, list] = {}
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        self.closed = False
        self.reader_thread: threading.Thread | None = None

    @staticmethod
    def _hook(v):
        if isinstance(v, Proxy):
            return object.__getattribute__(v, "_ref")
        return None

    def send(self, msg) -> None:
        with self.send_lock:
            self.chan.send(msg)

    def reader(self) -> None:
        try:
            while True:
                msg = self.chan.recv()
                if msg.get("op") == "preturn":
                    with self.lock:
                        slot = self.waiters.get(msg.get("id"))
                    if slot is not None:
                        slot[1] = msg
                        slot[0].set()
                else:
                    self.calls.put(msg)
        except BaseException as e:  # noqa: BLE001 - any failure ends the session
            self.closed = True
            self.calls.put({"op": "closed", "why": repr(e)})
            with self.lock:
                for slot in self.waiters.values():
                    slot[0].set()

    def next_call(self) -> dict:
        """The next message for the main thread. Until a proxy is used the main thread reads the
        socket itself: starting a reader thread costs a forced GIL hand-off, which on a loaded
        machine waits for the OS to schedule that thread (measured: ~100 ms at load 10)."""
        if self.reader_thread is None:
            try:
                return self.chan.recv()
            except BaseException as e:  # noqa: BLE001
                return {"op": "closed", "why": repr(e)}
        return self.calls.get()

    def _ensure_reader(self) -> None:
        # Only called from inside a submission call, when the main thread is not reading.
        with self.lock:
            if self.reader_thread is None:
                self.reader_thread = threading.Thread(target=self.reader, name="inferprep-reader", daemon=True)
                self.reader_thread.start()

    def pcall(self, proxy_id: int, method: str, args, kwargs):
        self._ensure_reader()
        call_id = next(self.ids)
        slot = [threading.Event(), None]
        with self.lock:
            self.waiters[call_id] = slot
        try:
            self.send({"op": "pcall", "id": call_id, "proxy": proxy_id, "method": method,
                       "args": tuple(args), "kwargs": dict(kwargs)})
            slot[0].wait()
        finally:
            with self.lock:
                self.waiters.pop(call_id, None)
        msg = slot[1]
        if msg is None:
            raise ProxyError("the grader closed the connection")
        if "error" in msg:
            raise _EXC_TYPES.get(msg.get("type"), ProxyError)(msg["error"])
        return msg.get("value")


_CUDA_SYNC = torch.cuda.synchronize
"""Captured when the harness loads, before the submission exists: a submission that replaces
``torch.cuda.synchronize`` does not change what ``_timed`` calls (a guard, not a boundary: the
outputs' digest is taken inside the window and checked by the parent against the outputs it
fetches, so work left running shows as a mismatch or a wrong output)."""
_ZERO = torch.Tensor.zero_
_flush_buffer: torch.Tensor | None = None
L2_FALLBACK_BYTES = 64 << 20
"""L2 size assumed when torch reports none (``L2_cache_size`` is there in the torch versions the
platform supports): above the H100's and H200's 50 MB (NVIDIA H100 Tensor Core GPU Architecture
whitepaper). Too large a flush only costs time, which the stage measures and subtracts."""


def _l2_flush(device: str) -> None:
    """On CUDA, overwrite a buffer of twice the device's L2 cache (``L2_cache_size``), so that no
    timed call finds its inputs in L2 from the previous one. On CPU nothing: a core's caches are
    private and a shared L3 of tens of MB would cost milliseconds a call to evict; CPU figures are
    warm-cache figures (docs/security.md)."""
    global _flush_buffer
    if not device.startswith("cuda"):
        return
    if _flush_buffer is None:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        size = 2 * int(getattr(props, "L2_cache_size", 0) or L2_FALLBACK_BYTES)
        _flush_buffer = torch.empty(size, dtype=torch.uint8, device=device)
    _ZERO(_flush_buffer)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        _CUDA_SYNC()  # the whole device: every stream, a side stream included


_perf: dict = {"staged": None, "outputs": None}


def _stage(msg: dict) -> None:
    inner = msg.get("inner")
    if not isinstance(inner, dict) or inner.get("op") not in ("call", "launch"):
        raise TypeError("stage needs a call or a launch")
    _perf["staged"], _perf["outputs"] = inner, None


def _timed(module, msg: dict, device: str) -> int:
    """Run the staged request between an L2 flush and device synchronisations; keep its outputs and
    return their digest (``perf_wire``)."""
    inner, _perf["staged"] = _perf["staged"], None
    if inner is None:
        raise TypeError("nothing was staged")
    perf_wire.unmask(inner, int(msg.get("key", 0)))
    _l2_flush(device)
    _sync(device)
    if msg.get("echo"):
        if inner["op"] == "launch":
            value = [a["buffer"] for a in inner.get("args", ()) if isinstance(a, dict) and "buffer" in a]
        else:
            value = [torch.empty(tuple(shape), dtype=dtype, device=device) for shape, dtype in msg.get("like") or ()]
    elif inner["op"] == "launch":
        value = triton_launch.launch(module, inner)
    else:
        fn = getattr(module, str(inner.get("fn")), None)
        if not callable(fn):
            raise TypeError(f"{inner.get('fn')!r} is not defined in the submission")
        value = fn(*inner.get("args", ()), **inner.get("kwargs", {}))
    _sync(device)
    result = perf_wire.digest(perf_wire.tensors(value), int(msg.get("sketch", 0)))
    _perf["outputs"] = None if msg.get("echo") else value
    return result


def _fetch() -> object:
    value, _perf["outputs"] = _perf["outputs"], None
    return value


NOFILE = 1024
"""Open files per process (the CUDA driver and torch need well under this)."""


def _apply_limits(limits: dict, device: str) -> None:
    """RLIMITs counted from where the harness stands now (after importing torch)."""
    def setr(res, soft, hard=None):
        hard = soft if hard is None else hard
        cur_soft, cur_hard = resource.getrlimit(res)
        if cur_hard != resource.RLIM_INFINITY:
            hard = min(hard, cur_hard)
            soft = min(soft, hard)
        resource.setrlimit(res, (soft, hard))

    ru = resource.getrusage(resource.RUSAGE_SELF)
    used = ru.ru_utime + ru.ru_stime
    cpu = int(used + limits["time_s"] + 1)
    setr(resource.RLIMIT_CPU, cpu, cpu + 2)
    if device == "cpu" and limits.get("memory_mib"):
        vm = 0
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    vm = int(line.split()[1]) * 1024
        setr(resource.RLIMIT_AS, vm + int(limits["memory_mib"]) * 1024 * 1024)
    setr(resource.RLIMIT_FSIZE, int(limits.get("output_bytes", 8 << 20)))
    setr(resource.RLIMIT_CORE, 0)
    # Each open file can pin kernel memory outside RLIMIT_AS (pipe buffers, a memfd without the
    # filter): keep the count small; times RLIMIT_NPROC it bounds what one submission can hold.
    setr(resource.RLIMIT_NOFILE, int(limits.get("nofile", NOFILE)))
    if limits.get("nproc"):
        setr(resource.RLIMIT_NPROC, int(limits["nproc"]))


def _preload_public_modules() -> None:
    """Import the public modules (``wire.ALLOWED_MODULES``: specs tables, simulators) before the
    audit hook hides the checkout they live in, so the submission can import them and the wire
    can decode their dataclasses and enums."""
    import pkgutil

    from .wire import ALLOWED_MODULES

    for name in ALLOWED_MODULES:
        try:
            mod = importlib.import_module(name)
        except Exception:  # noqa: BLE001
            continue
        for info in pkgutil.walk_packages(getattr(mod, "__path__", []), name + ".",
                                          onerror=lambda _name: None):
            try:
                importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 - a broken simulator must not break every run
                pass


class ForbiddenCall(RuntimeError):
    """A library callable this exercise's statement forbids (``forbidden`` in exercise.toml)."""


def _forbid(names: list[str]) -> list[str]:
    """Replace each dotted name with a function that raises ``ForbiddenCall``; returns the names
    that could not be resolved (reported on stderr, never fatal). A guard against shortcuts, not a
    boundary: a determined submission can reach the originals through ctypes."""
    missing = []
    for name in names:
        parts = name.split(".")
        obj = None
        for i in range(len(parts) - 1, 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            try:
                for attr in parts[i:-1]:
                    obj = getattr(obj, attr)
                getattr(obj, parts[-1])
            except AttributeError:
                obj = None
            break
        if obj is None:
            missing.append(name)
            continue

        def refuse(*args, _name=name, **kwargs):
            raise ForbiddenCall(f"{_name} is not allowed in this exercise (the statement asks you to "
                                "write it yourself)")
        try:
            setattr(obj, parts[-1], refuse)
        except (AttributeError, TypeError):
            missing.append(name)
    return missing


def _install_audit_hook(hidden: list[str], secret: list[str] = (), reveal: list[str] = (),
                        allow_network: bool = False) -> None:
    """Refuse, from here on, to open hidden paths, start processes, load native code or connect.

    A path is refused if it lies under a ``secret`` root, or under a ``hidden`` root and not under
    a ``reveal`` root (the Python install and the venv may live in a hidden home directory)."""
    def norm(paths_):
        return tuple(os.path.realpath(h) for h in paths_)

    hidden_r, secret_r, reveal_r = norm(hidden), norm(secret), norm(reveal)

    def within(rp: str, roots) -> bool:
        return any(rp == r or rp.startswith(r + os.sep) for r in roots)

    def under(p) -> bool:
        if isinstance(p, int):
            return False
        try:
            rp = os.path.realpath(os.fsdecode(p))
        except (TypeError, ValueError):
            return False
        if within(rp, secret_r):
            return True
        return within(rp, hidden_r) and not within(rp, reveal_r)

    blocked = {"os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen",
               "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.call_function",
               "os.kill", "os.killpg", "sys.addaudithook"}
    if not allow_network:
        blocked |= {"socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo"}
    path_events = {"open", "os.listdir", "os.scandir", "os.chdir", "glob.glob", "shutil.copyfile",
                   "os.rename", "os.remove", "os.link", "os.symlink"}

    def hook(event: str, args) -> None:
        if event in blocked:
            raise PermissionError(f"inferprep sandbox: {event} is not allowed in a submission")
        if event in path_events and args and under(args[0]):
            raise PermissionError(f"inferprep sandbox: {args[0]!r} is not readable by submissions")

    sys.addaudithook(hook)


def _exc_message(e: BaseException) -> dict:
    kind = "error"
    text = f"{type(e).__name__}: {e}"
    if (isinstance(e, MemoryError) or "can't allocate memory" in str(e) or "bad_alloc" in str(e)
            or cuda.is_out_of_memory(e)):  # the GPU cap (``cuda.setup_child``) binds as a memory limit
        kind = "memory"
    elif isinstance(e, OSError) and e.errno == errno.EFBIG:
        kind = "output"
    tb = traceback.format_exception(e)
    # Keep the submission's frames; the harness's own frames are noise to the user.
    tb = [line for line in tb if "inferprep/runner/harness.py" not in line]
    return {"op": "raised", "type": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
            "message": text[:4000], "traceback": "".join(tb)[-6000:], "kind": kind}


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def serve(sock: socket.socket, scopes: list[str] = ()) -> int:
    """Answer the grader on ``sock`` until it says exit. ``scopes``: the per-child namespaces the
    warm pool gave this process, reported in the hello."""
    torch.set_num_threads(1)
    client = Client(sock, "cpu")
    init = gpu = None
    if os.environ.get("INFERPREP_DEVICE") == "cuda":
        # A CUDA child reads its init first (the parent sends it before waiting for the hello), so
        # that it opens CUDA and caps the GPU memory before the seccomp filter and before its hello:
        # CUDA's start-up is the platform's, and a failure in it is an internal error the judge
        # retries, never the submission's. The submission's code is in the frame, not yet on disk.
        try:
            init = client.chan.recv(timeout=60)
        except (WireError, OSError):
            return 3
        try:
            gpu = cuda.setup_child(int(init["limits"]["memory_mib"]), torch)
        except Exception as e:  # noqa: BLE001 - reported to the parent, which stops the run
            client.send({"op": "hello", "error": f"cannot set up CUDA: {type(e).__name__}: {e}"})
            return 3
    filtered = False
    if os.environ.get("INFERPREP_SECCOMP") == "1":
        from . import syscalls
        try:
            syscalls.install()
        except Exception as e:  # noqa: BLE001 - reported to the parent, which stops the run
            client.send({"op": "hello", "error": f"cannot load the seccomp filter: {type(e).__name__}: {e}"})
            return 3
        filtered = True
    _preload_public_modules()
    hello = {"op": "hello", "seccomp": filtered, "scopes": list(scopes), "cpu": _cpu()}
    if gpu is not None:
        hello["gpu"] = gpu.as_dict()
    client.send(hello)
    if init is None:
        try:
            init = client.chan.recv(timeout=60)
        except (WireError, OSError):
            return 3
    device = init.get("device", "cpu")
    workdir = Path(init.get("workdir") or os.getcwd())
    path = workdir / SUBMISSION_FILE
    path.write_text(init["code"], encoding="utf-8")
    if "triton" in (init.get("requires") or ()):
        triton_launch.prepare(device, str(workdir))
    _apply_limits(init["limits"], device)
    for name in _forbid(list(init.get("forbidden") or [])):
        print(f"inferprep: could not forbid {name} (not found)", file=sys.stderr)
    _install_audit_hook(list(init.get("hidden", [])), list(init.get("secret", [])), list(init.get("reveal", [])))

    # Load the submission from its file path, never through sys.path; its code objects (and so its
    # tracebacks) name it solution.py, whose lines linecache serves from the source read here.
    try:
        source = path.read_text(encoding="utf-8")
        code = compile(source, SHOWN_NAME, "exec")
    except SyntaxError as e:
        shown = "".join(traceback.format_exception_only(e)).rstrip()
        client.send({"op": "invalid", "message": f"SyntaxError: {e.msg} (line {e.lineno})\n{shown}"[:4000],
                     "traceback": shown})
        return 0
    try:
        spec = importlib.util.spec_from_file_location("submission", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["submission"] = module
        linecache.cache[SHOWN_NAME] = (len(source), None, source.splitlines(True), SHOWN_NAME)
        exec(code, module.__dict__)  # noqa: S102 - the submission, in its sandbox
    except BaseException as e:  # noqa: BLE001 - SystemExit at import is a runtime error too
        client.send(_exc_message(e) | {"at": "import"})
        return 0
    missing = [name for name in init["entrypoints"] if not callable(getattr(module, name, None))]
    if missing:
        client.send({"op": "invalid", "message": f"missing entrypoint(s): {', '.join(missing)} "
                     "(define them at the top level of your file)"})
        return 0
    client.send({"op": "ready"})

    while True:
        msg = client.next_call()
        op = msg.get("op")
        if op in ("exit", "closed"):
            return 0
        if op == "spmd":
            client.send(_spmd(module, msg))
            continue
        if op == "scratch":
            client.send(_scratch(module, msg))
            continue
        if op == "seed":
            try:
                torch.manual_seed(int(msg.get("value", 0)))
            except BaseException as e:  # noqa: BLE001
                client.send(_exc_message(e))
            else:
                client.send({"op": "result", "value": None, "cpu": _cpu()})
            continue
        if op not in ("call", "launch", "stage", "timed", "fetch"):
            continue
        fn = getattr(module, str(msg.get("fn")), None)
        try:
            if op == "stage":
                value = _stage(msg)
            elif op == "timed":
                value = _timed(module, msg, device)
            elif op == "fetch":
                value = _fetch()
            elif op == "launch":
                value = triton_launch.launch(module, msg)
            elif not callable(fn):
                raise TypeError(f"{msg.get('fn')!r} is not defined in the submission")
            else:
                value = fn(*msg.get("args", ()), **msg.get("kwargs", {}))
        except BaseException as e:  # noqa: BLE001 - report SystemExit/KeyboardInterrupt too
            reply = _exc_message(e)
        else:
            reply = {"op": "result", "value": value, "cpu": _cpu()}
        try:
            client.send(reply)
        except WireError as e:
            client.send({"op": "raised", "type": "WireError", "mro": ["WireError"], "kind":
                         "output" if "exceeds" in str(e) else "error",
                         "message": f"the returned value cannot be sent back: {e}", "traceback": ""})


def _spmd(module, msg: dict) -> dict:
    """Run ``fn`` once per rank, each in its own thread (SPMD), and report every rank's outcome."""
    fn = getattr(module, str(msg.get("fn")), None)
    calls = msg.get("calls", [])
    results: list = [None] * len(calls)

    def run(rank: int) -> None:
        args, kwargs = calls[rank]
        try:
            if not callable(fn):
                raise TypeError(f"{msg.get('fn')!r} is not defined in the submission")
            results[rank] = {"value": fn(*args, **kwargs)}
        except BaseException as e:  # noqa: BLE001
            results[rank] = {"raised": _exc_message(e)}

    threads = [threading.Thread(target=run, args=(r,), name=f"rank-{r}", daemon=True) for r in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"op": "spmd_result", "results": results, "cpu": _cpu()}


def _scratch(module, msg: dict) -> dict:
    """Run a scratch snippet in fresh globals that hold only ``solution`` (the submission's module)
    and the builtins: nothing of the harness is in its namespace. It runs after the limits and the
    audit hook, like the submission's own top-level code."""
    source = str(msg.get("code", ""))
    # Tracebacks then show the snippet's lines; no file is written or opened.
    linecache.cache[SCRATCH_FILE] = (len(source), None, source.splitlines(True), SCRATCH_FILE)
    try:
        exec(compile(source, SCRATCH_FILE, "exec"),
             {"__name__": "__main__", "__builtins__": builtins, "solution": module})
    except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are the snippet's too
        return _exc_message(e) | {"cpu": _cpu()}
    return {"op": "result", "value": None, "cpu": _cpu()}


def main(fd: int, scopes: list[str] = ()) -> None:
    sock = socket.socket(fileno=fd)
    code = serve(sock, scopes)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)
