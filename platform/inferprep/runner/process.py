"""The parent's handle on one running submission: start it, call it, host objects for it.

``SubmissionProcess.call(fn, *args, **kwargs)`` sends a call and serves the proxy calls the
submission makes meanwhile (``pcall`` frames) against objects registered with ``host``. It raises

- ``SubmissionRaised``: the submission raised (the process is still alive and usable);
- ``RunFailed(status, message)``: the process is gone or must be stopped (time, memory, output
  limit, a crash, a malformed frame). No further calls are possible.
"""

from __future__ import annotations

import itertools
import select
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..verdict import Status
from . import sandbox
from .recording import WireRecorder, frame_digest
from .wire import Channel, FrameTooLarge, ProxyRef, WireClosed, WireError, encode

SIGNALS = {24: "SIGXCPU", 9: "SIGKILL", 11: "SIGSEGV", 6: "SIGABRT", 25: "SIGXFSZ", 7: "SIGBUS", 8: "SIGFPE"}


STDOUT_SHOWN = 64 * 1024
STARTUP_S = 120.0
"""Wall seconds a child may take to start (bwrap, import torch) before its hello: a loaded machine
is the platform's problem, so running out of it is an internal error, not a time limit."""


BUSY_CPU_SHARE = 0.05
"""When the wall-clock backstop fires, a submission that got at least this share of one CPU over
the wall time was running on a busy machine (a sleeping or waiting one uses almost none)."""


def cpu_limit_message(used_s: float | None, limit_s: float, extra: str = "") -> str:
    """"CPU time limit exceeded: 2.1 s used, the limit is 2 s" (``used_s``: the submission's own
    CPU seconds, None if unknown)."""
    used = f"{used_s:.1f} s used, " if used_s is not None else ""
    return f"CPU time limit exceeded: {used}the limit is {limit_s:g} s{extra}"


def served_limit_message(served_s: float, limit_s: float) -> str:
    """Why a grading stopped when the grader's hosted objects had spent more than the CPU limit
    ``limit_s`` answering the submission's calls (``SubmissionProcess.served``)."""
    return (f"time limit exceeded: the grader's objects spent {served_s:.1f} s answering your calls to them, "
            f"more than the {limit_s:g} s limit (work your code asks of them counts as your time); "
            "it may call them in an endless loop, or far more often than it needs")


def wall_backstop_message(used_s: float | None, waited_s: float, wall_s: float, limit_s: float) -> str:
    """Why the wall-clock backstop (``wall_s``) fired after ``waited_s`` wall seconds, from the CPU
    seconds the submission used meanwhile: on a busy machine (it was running, but got too little
    CPU to reach its CPU limit of ``limit_s``) or waiting or sleeping (it used almost no CPU)."""
    if used_s is None:
        return (f"the wall-clock backstop of {wall_s:g} s fired before the CPU limit of {limit_s:g} s "
                "(the CPU time used is unknown here)")
    used = f"{used_s:.1f} s of CPU time used of the {limit_s:g} s limit in {waited_s:.0f} s"
    if used_s >= BUSY_CPU_SHARE * waited_s:
        return (f"the wall-clock backstop of {wall_s:g} s fired: your code was running ({used}), but the "
                "machine was busy, so it got too little CPU to reach its CPU limit in time; it may loop "
                "forever or be too slow")
    return f"the wall-clock backstop of {wall_s:g} s fired: your code was waiting or sleeping ({used})"


def read_capped(path, cap: int = STDOUT_SHOWN) -> tuple[str, int]:
    """(first ``cap`` bytes of the file as text, with a note if cut; the file's full size)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            data = f.read(cap)
    except FileNotFoundError:
        return "", 0
    text = data.decode("utf-8", "replace")
    if size > cap:
        text += f"\n... [{size - cap} more bytes not shown]"
    return text, size


_OPS = {"ready", "invalid", "raised", "result", "spmd_result", "pcall"}


def _malformed(msg) -> str | None:
    """Why a message from the child breaks the protocol's schema, or None. Everything the parent
    later reads from it has the type checked here, so a forged frame is the submission's fault."""
    if not isinstance(msg, dict):
        return "not a dict"
    op = msg.get("op")
    if type(op) is not str or op not in _OPS:
        return f"unknown op {str(op)[:40]!r}"
    if op == "pcall":
        if type(msg.get("id")) is not int or type(msg.get("method")) is not str:
            return "a proxy call needs an int id and a str method"
        if not isinstance(msg.get("args", ()), (tuple, list)) or not isinstance(msg.get("kwargs", {}), dict):
            return "proxy call arguments must be a tuple and a dict"
        if not all(type(k) is str for k in msg.get("kwargs", {})):
            return "keyword names must be strings"
    if op in ("raised", "invalid"):
        for key in ("type", "message", "traceback", "kind"):
            if key in msg and type(msg[key]) is not str:
                return f"{key} must be a string"
        if "mro" in msg and not (isinstance(msg["mro"], list) and all(type(x) is str for x in msg["mro"])):
            return "mro must be a list of strings"
    if op == "spmd_result":
        results = msg.get("results")
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            return "results must be a list of dicts"
        for r in results:
            if "raised" in r and (not isinstance(r["raised"], dict) or _malformed({"op": "raised", **r["raised"]})):
                return "a rank's exception is malformed"
    return None


def reported_cpu(msg: dict) -> float:
    """The CPU seconds a reply of the child says it used (0.0 when absent or absurd)."""
    cpu = msg.get("cpu")
    return float(cpu) if type(cpu) in (int, float) and 0 <= cpu < 1e9 else 0.0


class SubmissionRaised(Exception):
    """The submission raised an exception in a call; ``kind`` is error | memory | output."""

    def __init__(self, info: dict):
        self.info = info
        self.type_name = str(info.get("type", "Exception"))
        self.mro = [str(x) for x in info.get("mro", [])]
        self.kind = info.get("kind", "error")
        self.traceback = str(info.get("traceback", ""))
        super().__init__(str(info.get("message", self.type_name)))

    def is_a(self, name: str) -> bool:
        return name in self.mro or name == self.type_name


class RunFailed(Exception):
    def __init__(self, status: Status, message: str):
        self.status = status
        super().__init__(message)


@dataclass
class Hosted:
    """An object the grader hosts for the submission. Only ``methods`` may be called."""

    obj: Any
    methods: tuple[str, ...]
    attrs: dict[str, Any]
    concurrent: bool
    id: int = 0


@dataclass
class CallRecord:
    proxy: int
    method: str
    seconds: float
    error: str | None = None


CANCEL_CHECK_S = 0.25
"""How often, in seconds, a wait for the child checks its CPU time and the grading's cancel event."""


def wall_backstop_s(time_s: float) -> float:
    """The wall-clock backstop of a grading whose CPU limit is ``time_s`` seconds: CPU time is the
    real limit, the wall a backstop (statements quote it: speculative-verifier's 2 x 20 + 8 = 48 s)."""
    return 2 * time_s + 8


PROXY_THREADS = 64
"""Threads that answer calls to concurrent hosted objects (a ring's ranks), and the most such
calls in flight at once (keep SPMD worlds well below it)."""


@dataclass
class Budget:
    max_calls: int = 200_000
    call_timeout_s: float = 30.0


class SubmissionProcess:
    def __init__(self, code: str, entrypoints: list[str], *, time_s: float, memory_mib: int,
                 device: str = "cpu", mode: str | None = None, output_bytes: int = 8 << 20,
                 nproc: int = 64, budget: Budget | None = None, launcher=None, forbidden: list[str] = (),
                 recorder: WireRecorder | None = None, cancel: threading.Event | None = None,
                 requires: list[str] = ()):
        self.code = code
        self.cancel = cancel
        """Set by the grading's owner (a Cancel): the child is killed within ``CANCEL_CHECK_S``."""
        self.recorder = recorder
        """Records what the grader sends (calls, hosted objects' answers) when set (check-exercise)."""
        self.entrypoints = entrypoints
        self.forbidden = list(forbidden)
        self.requires = list(requires)
        """Optional extras the child prepares before the submission loads (``triton``)."""
        self.time_s = time_s
        self.limits = {"time_s": time_s, "memory_mib": memory_mib, "output_bytes": output_bytes,
                       "nproc": nproc}
        self.device = device
        self.tree_cpu_s = 2 * time_s + 4  # the harness's own start-up (import torch) counts here
        self.wall_s = wall_backstop_s(time_s)
        self.budget = budget or Budget()
        self.hosted: dict[int, Hosted] = {}
        self.ids = itertools.count(1)
        self.records: list[CallRecord] = []
        self.dead: RunFailed | None = None
        self.platform_failure: str | None = None
        """Why the platform (not the submission) ended this run; the judge retries such a run."""
        self.hello: dict = {}
        self.gpu_cap = None
        """A CUDA child's ``cuda.GpuCap`` (from its hello, sent before the submission's code ran)."""
        self.internal_error: Exception | None = None
        self.cpu_used = 0.0
        self.startup_cpu = 0.0
        """CPU seconds the child had used when it said hello, before the submission's code existed
        (the harness's start-up: an import of torch on a cold start); not the submission's."""
        self.returncode: int | None = None
        self.stdout, self.stderr, self.stdout_bytes, self.stderr_bytes = "", "", 0, 0
        self._send_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        if launcher is None:
            from .forkserver import launch as launcher
        self.launcher = launcher
        self.started = time.monotonic()
        self.waited = 0.0
        self.served = 0.0
        """CPU seconds the grader's threads spent answering the submission's calls to hosted objects
        (summed over calls; ``served_limit_message``). Work the submission asks of the grader is the
        submission's, though it runs in this process where no RLIMIT_CPU sees it: it may not exceed
        ``time_s`` on its own, and a synchronous call's wall time counts toward the wall backstop
        (it is added to ``waited``). CPU, not wall time: a concurrent object's call that blocks on
        a barrier until the other ranks arrive is waiting on the submission, not working for it."""
        self._served_lock = threading.Lock()
        self.dispatched = 0
        """Proxy calls taken from the child so far (``Budget.max_calls``)."""
        self._in_flight = threading.BoundedSemaphore(PROXY_THREADS)
        self.ready = False
        self.wall_deadline: float | None = None
        """A time.monotonic() instant after which no wait on the child goes on (the counterexample
        search's budget); None: only the wall backstop ``wall_s`` applies."""
        self.child = self.launcher(device=device, mode=mode)
        self.mode = self.child.mode
        self.chan = Channel(self.child.sock, proxy_hook=self._hook, proxy_factory=self._resolve,
                            device_map=self._device_map)

    # -- wire helpers -------------------------------------------------------------------------
    def _hook(self, v):
        if isinstance(v, Hosted):
            return ProxyRef(v.id, v.methods, v.attrs)
        return None

    def _resolve(self, ref: ProxyRef):
        h = self.hosted.get(ref.id)
        if h is None:
            raise WireError(f"no hosted object #{ref.id}")
        return h

    def _device_map(self, d: str) -> str:
        """Where a tensor from the child lands here. CUDA only when grading on CUDA: a forged
        ``"device": "cuda"`` in a CPU grading must not make this process set up a CUDA context
        (hundreds of MB) for a frame of a few bytes; the child has no GPU then anyway."""
        if d.startswith("cuda"):
            import torch
            return d if self.device.startswith("cuda") and torch.cuda.is_available() else "cpu"
        return "cpu" if d != "meta" else "meta"

    def _send(self, msg) -> None:
        with self._send_lock:
            # A hosted object's answer is recorded before it is sent: once the child has it, a
            # rank may return and the grader open its next case, and an answer recorded after
            # that would land in the next case's recording (a flaky salt check).
            if self.recorder is not None and msg.get("op") == "preturn":
                self._record(msg, b"", [])
            head, bufs = self.chan.send(msg)
            if self.recorder is not None and msg.get("op") != "preturn":
                self._record(msg, head, bufs)

    def _record(self, msg: dict, head: bytes, bufs: list) -> None:
        op = msg.get("op")
        if op in ("call", "spmd"):
            self.recorder.request(op, str(msg.get("fn")), frame_digest(head, bufs))
        elif op == "launch":
            self.recorder.request(op, str(msg.get("kernel")), frame_digest(head, bufs))
        elif op == "seed":
            self.recorder.request(op, "torch.manual_seed", frame_digest(head, bufs))
        elif op == "preturn":  # without the child's call id (concurrent ranks number them in any order)
            h, b = encode({k: v for k, v in msg.items() if k != "id"}, self._hook)
            self.recorder.reply(frame_digest(h, b))

    def host(self, obj, methods, attrs=None, concurrent: bool = False) -> Hosted:
        h = Hosted(obj, tuple(methods), dict(attrs or {}), concurrent)
        h.id = next(self.ids)
        self.hosted[h.id] = h
        return h

    # -- lifecycle ----------------------------------------------------------------------------
    def remaining(self) -> float:
        """Wall seconds left for waiting on the child. Only time spent waiting for the child
        (start-up included) or answering its calls to hosted objects counts: the grader's own
        computation is not the submission's."""
        return max(0.1, self.wall_s - self.waited)

    def _hello(self) -> None:
        """Read the harness's hello: the frame it sends before the submission's code exists in the
        child. Anything that stops the child before it (bwrap or the warm pool failing to set up,
        a missing seccomp library, a start-up slower than ``STARTUP_S`` on a loaded machine) is the
        platform's failure: an internal error, retried by the judge, never charged to the student."""
        deadline = time.monotonic() + STARTUP_S
        try:
            msg = self.chan.recv(deadline=deadline)
        except (socket.timeout, WireError, OSError) as e:
            rc, _ = self.child.wait(timeout=2.0)
            err = self.child.stderr_path.read_bytes()[-2000:].decode("utf-8", "replace").strip()
            detail = err.splitlines()[-1][:300] if err else f"{type(e).__name__}"
            raise self._platform(f"the sandbox could not start the child process (exit {rc}): {detail}") from None
        if not isinstance(msg, dict) or msg.get("op") != "hello" or msg.get("error"):
            why = msg.get("error") if isinstance(msg, dict) else None
            raise self._platform(f"the child process failed to set up: {str(why or msg)[:300]}")
        self.hello = msg
        self.startup_cpu = reported_cpu(msg)
        pool = getattr(self.child, "pool", None)
        if pool is not None:
            pool.failures = 0
        if sandbox.seccomp_flag() == "1" and msg.get("seccomp") is not True:
            raise self._platform("the child process did not load the seccomp filter")
        if self.device == "cuda":
            from . import cuda
            self.gpu_cap = cuda.cap_from_hello(msg)
            if self.gpu_cap is None:
                raise self._platform("the child process did not cap its GPU memory")

    def _platform(self, message: str) -> RunFailed:
        self.platform_failure = message
        pool = getattr(self.child, "pool", None)
        if pool is not None:
            pool.note_failure(message)
        return self._fail(Status.INTERNAL_ERROR, message)

    def start(self) -> dict:
        """Send the code; returns the child's first answer ({"op": "ready"|"invalid"|"raised"})."""
        self._send({"op": "init", "code": self.code, "entrypoints": self.entrypoints, "limits": self.limits,
                    "device": self.device, "hidden": [str(p) for p in sandbox.hidden_paths()],
                    "secret": [str(p) for p in sandbox.secret_paths()],
                    "reveal": [str(p) for p in sandbox.revealed_paths()],
                    "workdir": self.child.extra["workdir"], "forbidden": self.forbidden,
                    "requires": self.requires})
        self._hello()
        reply = self._recv_reply()
        self.ready = reply.get("op") == "ready"
        return reply

    def _fail(self, status: Status, message: str) -> RunFailed:
        if self.dead is None:
            self.dead = RunFailed(status, message)
            self.child.kill()
        return self.dead

    def _death(self, fallback: str) -> RunFailed:
        """Classify why the child stopped answering."""
        rc, cpu = self.child.wait(timeout=2.0)
        self.returncode, self.cpu_used = rc, cpu
        sig = -rc if rc is not None and rc < 0 else (rc - 128 if rc and rc > 128 and self.child.signal_128 else 0)
        err = self.child.stderr_path.read_bytes()[-4000:].decode("utf-8", "replace")
        if self.child.platform_failure:
            return self._platform(f"{self.child.platform_failure} {fallback}")
        if sig == 24 or (sig == 9 and cpu >= self.time_s):
            return self._fail(Status.TIME_LIMIT, cpu_limit_message(self._own(cpu), self.time_s))
        if sig == 25:
            return self._fail(Status.OUTPUT_LIMIT, "output file size limit exceeded")
        if "bad_alloc" in err or "Cannot allocate memory" in err or "MemoryError" in err:
            return self._fail(Status.MEMORY_LIMIT, "memory limit exceeded (the process was stopped)")
        if sig:
            return self._fail(Status.RUNTIME_ERROR, f"the submission process was killed by {SIGNALS.get(sig, f'signal {sig}')} {fallback}")
        return self._fail(Status.RUNTIME_ERROR, f"the submission process exited with code {rc} {fallback}")

    def _own(self, cpu: float | None) -> float | None:
        """The submission's share of ``cpu`` (the child's CPU seconds): without the start-up."""
        return None if cpu is None else max(0.0, cpu - self.startup_cpu)

    def _tree_cpu(self) -> float | None:
        """CPU seconds of the running child and what it started: its uid's processes, or the
        harness process itself when it runs unsandboxed without a uid of its own; None if unknown
        (bubblewrap without a pool uid: the process we hold is bwrap, not the harness)."""
        uid = self.child.uid_used
        if uid is not None:
            return sandbox.uid_cpu_seconds(uid)
        if self.mode == "none":
            return sandbox.pid_cpu_seconds(self.child.proc.pid)
        return None

    def _wait_readable(self, deadline: float) -> None:
        """Wait for the next frame until ``deadline`` (time.monotonic), checking every 0.25 s the
        CPU time of the child's whole uid (a fork loop spreads over many processes, each under its
        own RLIMIT_CPU; children it reaped count through their parent's cutime)."""
        uid = self.child.uid_used
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout()
            r, _, _ = select.select([self.child.sock], [], [], min(CANCEL_CHECK_S, left))
            if r:
                return
            if self.cancel is not None and self.cancel.is_set():
                raise self._fail(Status.RUNTIME_ERROR, "the grading was cancelled")
            if uid is not None and (tree := sandbox.uid_cpu_seconds(uid)) > self.tree_cpu_s:
                raise self._fail(Status.TIME_LIMIT, cpu_limit_message(
                    self._own(tree), self.time_s, ", counting every process your code started"))

    def _recv_reply(self) -> dict:
        """Receive frames until a reply to the current call; serve proxy calls meanwhile. One
        deadline (the wall budget left) bounds the whole wait, however the child drips bytes."""
        while True:
            if self.dead:
                raise self.dead
            t0 = time.monotonic()
            deadline = t0 + self.remaining()
            if self.wall_deadline is not None:
                deadline = min(deadline, self.wall_deadline)
            try:
                self._wait_readable(deadline)
                msg = self.chan.recv(deadline=deadline)
            except socket.timeout:
                if self.wall_deadline is not None and time.monotonic() >= self.wall_deadline:
                    raise self._fail(Status.TIME_LIMIT, "the counterexample search's time ran out") from None
                used = self._own(self._tree_cpu())
                message = wall_backstop_message(used, self.waited + time.monotonic() - t0, self.wall_s, self.time_s)
                raise self._fail(Status.TIME_LIMIT, message) from None
            except FrameTooLarge as e:
                raise self._fail(Status.OUTPUT_LIMIT, f"the submission sent too much data: {e}") from None
            except WireClosed:
                raise self._death("before answering") from None
            except (WireError, OSError) as e:
                raise self._fail(Status.RUNTIME_ERROR, f"malformed message from the submission: {e}") from None
            finally:
                self.waited += time.monotonic() - t0
            problem = _malformed(msg)
            if problem:
                raise self._fail(Status.RUNTIME_ERROR, f"malformed message from the submission: {problem}")
            if msg["op"] == "pcall":
                t1 = time.monotonic()
                try:
                    self._serve_pcall(msg)
                finally:
                    self.waited += time.monotonic() - t1
                continue
            return msg

    def _serve_pcall(self, msg: dict) -> None:
        if self.dispatched >= self.budget.max_calls:      # counted when sent: concurrent calls finish later
            raise self._fail(Status.TIME_LIMIT, f"more than {self.budget.max_calls} calls to the grader's objects")
        self._check_served()
        self.dispatched += 1
        h = self.hosted.get(msg.get("proxy")) if type(msg.get("proxy")) is int else None
        method = msg.get("method")
        call_id = msg["id"]
        args, kwargs = msg.get("args", ()), msg.get("kwargs", {})
        if h is None or method not in h.methods or not isinstance(args, (tuple, list)) or not isinstance(kwargs, dict):
            err = (f"no method {method!r} on this object" if h is not None else "unknown object")
            self.records.append(CallRecord(msg.get("proxy", -1), str(method), 0.0, err))
            self._send({"op": "preturn", "id": call_id, "error": err, "type": "ProxyError"})
            return
        args = tuple(a.obj if isinstance(a, Hosted) else a for a in args)
        kwargs = {k: (v.obj if isinstance(v, Hosted) else v) for k, v in kwargs.items()}
        if h.concurrent:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=PROXY_THREADS, thread_name_prefix="inferprep-proxy")
            # At most PROXY_THREADS calls in flight: a child that sends calls without waiting for
            # the answers is not read from until one finishes, so the parent never queues (and
            # holds the decoded arguments of) more calls than it runs.
            if not self._in_flight.acquire(timeout=self.remaining()):
                raise self._fail(Status.TIME_LIMIT, f"{PROXY_THREADS} calls to the grader's objects stayed "
                                 "unanswered until the wall-clock backstop")
            try:
                self._pool.submit(self._run_concurrent, h, method, call_id, args, kwargs)
            except BaseException:
                self._in_flight.release()
                raise
        else:
            self._run_pcall(h, method, call_id, args, kwargs)

    def _run_concurrent(self, h: Hosted, method: str, call_id, args, kwargs) -> None:
        try:
            if self.dead is None:          # a grading already over runs none of its queued calls
                self._run_pcall(h, method, call_id, args, kwargs)
        finally:
            self._in_flight.release()

    def _run_pcall(self, h: Hosted, method: str, call_id, args, kwargs) -> None:
        t0, cpu0 = time.perf_counter(), time.thread_time()
        err = None
        try:
            value = getattr(h.obj, method)(*args, **kwargs)
            reply = {"op": "preturn", "id": call_id, "value": value}
        except (ValueError, TypeError, IndexError, KeyError, TimeoutError, RuntimeError) as e:
            err = f"{type(e).__name__}: {e}"
            reply = {"op": "preturn", "id": call_id, "error": str(e), "type": type(e).__name__}
        except Exception as e:  # noqa: BLE001 - a bug in the hosted object: the grader's fault
            err = f"{type(e).__name__}: {e}"
            self.internal_error = e
            reply = {"op": "preturn", "id": call_id, "error": "internal error in the grader", "type": "RuntimeError"}
        self.records.append(CallRecord(h.id, method, time.perf_counter() - t0, err))
        spent = time.thread_time() - cpu0      # CPU: a ring's barrier waiting on other ranks is not work
        with self._served_lock:
            self.served += spent
        try:
            self._send(reply)
        except WireError as e:  # the hosted object returned something unencodable: the grader's bug
            self.internal_error = self.internal_error or e
            try:
                self._send({"op": "preturn", "id": call_id, "error": "internal error in the grader", "type": "RuntimeError"})
            except (WireError, OSError):
                pass
        except OSError:
            pass

    def call_spmd(self, fn: str, calls: list[tuple[tuple, dict]]) -> list[Any]:
        """Run ``fn(*args_r, **kwargs_r)`` once per rank r, concurrently, in the child.

        Returns the per-rank values; if any rank raised, raises ``SubmissionRaised`` for the lowest
        such rank, with ``.rank`` and ``.per_rank`` (a list of SubmissionRaised or None)."""
        msg = self._request({"op": "spmd", "fn": fn, "calls": [[tuple(a), dict(k)] for a, k in calls]})
        results = msg.get("results") if msg.get("op") == "spmd_result" else None
        if not isinstance(results, list) or len(results) != len(calls) or not all(isinstance(r, dict) for r in results):
            raise self._fail(Status.RUNTIME_ERROR, "unexpected message from the submission")
        errors = [SubmissionRaised(r["raised"]) if isinstance(r.get("raised"), dict) else None for r in results]
        for e in errors:
            if e is not None and e.kind == "memory":
                raise self._fail(Status.MEMORY_LIMIT, f"memory limit exceeded: {e}")
        for rank, e in enumerate(errors):
            if e is not None:
                e.rank, e.per_rank = rank, errors
                raise e
        return [r.get("value") for r in results]

    def _request(self, msg: dict) -> dict:
        """Send one request to the child and return its reply (serving proxy calls meanwhile).
        A WireError from encoding the grader's own arguments propagates: the grader's fault."""
        if self.dead:
            raise self.dead
        try:
            self._send(msg)
        except WireError:
            raise
        except OSError:
            raise self._death("before the call") from None
        reply = self._recv_reply()
        if self.internal_error is not None:
            e, self.internal_error = self.internal_error, None
            raise e
        self._check_served()          # the call's last proxy calls (or a burst of concurrent ones)
        return reply

    def _check_served(self) -> None:
        """A time-limit verdict once the hosted objects' work on the submission's calls
        (``served``) is over ``time_s``: checked before each proxy call is taken and after each
        call to the submission returns, so neither a last expensive call nor a burst of concurrent
        ones ends a grading over the limit with a pass."""
        if self.served > self.time_s:
            raise self._fail(Status.TIME_LIMIT, served_limit_message(self.served, self.time_s))

    def call(self, fn: str, *args, **kwargs) -> Any:
        return self._value(self._request({"op": "call", "fn": fn, "args": args, "kwargs": kwargs}))

    def perf_request(self, msg: dict) -> Any:
        """One of the perf stage's requests (``stage``, ``timed``, ``fetch``: see ``harness`` and
        ``perf_wire``); returns its value, raises like ``call``. The caller times what it times
        with its own clock (``runner.perf``)."""
        return self._value(self._request(msg))

    def run_scratch(self, snippet: str) -> float:
        """Run a scratch snippet in the child with the submission bound to ``solution`` (the
        harness's ``scratch`` op). Returns the child's CPU seconds so far as it reports them (a
        figure to show, not to trust: ``reported_cpu``); raises ``SubmissionRaised`` (its ``info``
        has the CPU seconds too) or ``RunFailed`` as ``call`` does."""
        msg = self._request({"op": "scratch", "code": snippet})
        self._value(msg)
        return reported_cpu(msg)

    def _value(self, msg: dict) -> Any:
        """The value of a reply to a call; raises for an exception or a reply out of protocol."""
        op = msg.get("op")
        if op == "result":
            return msg.get("value")
        if op == "raised":
            if msg.get("kind") == "memory":
                raise self._fail(Status.MEMORY_LIMIT, f"memory limit exceeded: {msg.get('message', '')}")
            if msg.get("kind") == "output":
                raise self._fail(Status.OUTPUT_LIMIT, f"output limit exceeded: {msg.get('message', '')}")
            raise SubmissionRaised(msg)
        raise self._fail(Status.RUNTIME_ERROR, f"unexpected message from the submission: {str(op)[:40]}")

    def launch(self, kernel: str, grid: tuple[int, ...], args: list, constexprs: dict) -> Any:
        """Launch the submission's Triton kernel ``kernel[grid](*args, **constexprs)`` in the child
        (``triton_launch``); returns what the child sends back (the tensor arguments' buffers,
        unchecked). Raises like ``call``."""
        msg = self._request({"op": "launch", "kernel": kernel, "grid": list(grid), "args": list(args),
                             "constexprs": dict(constexprs)})
        return self._value(msg)

    def seed_torch(self, seed: int) -> None:
        """``torch.manual_seed(seed)`` in the child: torch's global generators (CPU and CUDA) in a
        state the grader knows. The child is untrusted and may ignore it; a grader only compares
        what the submission returns afterwards with what it returns given a generator in that
        state."""
        msg = self._request({"op": "seed", "value": int(seed)})
        op = msg.get("op")
        if op == "result":
            return
        if op == "raised":
            raise SubmissionRaised(msg)
        raise self._fail(Status.RUNTIME_ERROR, f"unexpected message from the submission: {str(op)[:40]}")

    def close(self, wait: bool = False) -> None:
        """Stop the child and collect its output. After a normal finish the reaping and the uid
        sweep happen on a background thread (``drain_cleanups`` waits for them): the verdict does
        not wait for a process to tear down its address space. ``wait``: kill every process of the
        child's uid now, before returning (the perf stage follows: nothing of the graded run may
        live on beside the reference it times, as a child that ignores ``exit`` would for the
        clean-up's 5 s)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self.dead is None:
            try:
                self._send({"op": "exit"})
            except (WireError, OSError):
                pass
            self.stdout, self.stdout_bytes = read_capped(self.child.stdout_path)
            self.stderr, self.stderr_bytes = read_capped(self.child.stderr_path)
            if wait:
                self.child.cleanup()
                return
            t = threading.Thread(target=self._finish, name="inferprep-cleanup", daemon=True)
            with _CLEANUPS_LOCK:
                _CLEANUPS.add(t)
            t.start()
            return
        self.child.kill()
        self.stdout, self.stdout_bytes = read_capped(self.child.stdout_path)
        self.stderr, self.stderr_bytes = read_capped(self.child.stderr_path)
        self.child.cleanup()

    def _finish(self) -> None:
        try:
            rc, cpu = self.child.wait(timeout=5.0)
            self.returncode, self.cpu_used = rc, cpu
            self.child.cleanup()
        finally:
            with _CLEANUPS_LOCK:
                _CLEANUPS.discard(threading.current_thread())


_CLEANUPS: set[threading.Thread] = set()
_CLEANUPS_LOCK = threading.Lock()


def drain_cleanups(timeout: float = 30.0) -> None:
    """Wait for the background clean-ups of finished submissions (tests, shutdown)."""
    deadline = time.monotonic() + timeout
    while True:
        with _CLEANUPS_LOCK:
            pending = list(_CLEANUPS)
        if not pending or time.monotonic() > deadline:
            return
        for t in pending:
            t.join(max(0.0, deadline - time.monotonic()))


def load_submission(proc: SubmissionProcess) -> tuple[Status | None, str]:
    """Start ``proc`` (the child loads the submission from its file): (None, "") when it is ready
    for calls, else the status and message of why not (invalid, raised or died while importing,
    or the platform failed)."""
    try:
        first = proc.start()
    except RunFailed as e:
        return e.status, (str(e) if proc.platform_failure else f"while importing your file: {e}")
    op = first.get("op")
    if op == "ready":
        return None, ""
    if op == "invalid":
        return Status.INVALID_SUBMISSION, str(first.get("message", "invalid submission"))
    if op == "raised":
        kind = first.get("kind")
        status = {"memory": Status.MEMORY_LIMIT, "output": Status.OUTPUT_LIMIT}.get(kind, Status.RUNTIME_ERROR)
        return status, f"your file raised while being imported: {first.get('message')}\n{first.get('traceback', '')}".strip()
    return Status.RUNTIME_ERROR, "the submission process answered out of protocol"
