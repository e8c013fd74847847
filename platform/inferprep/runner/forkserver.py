"""The warm pool: a fork server that has imported torch, numpy and the harness forks a fresh,
isolated child per submission, so a submission does not pay the ~1.3 s ``import torch``.

Why a fork server and not a pre-forked child per slot: a child forked from a process that has
already run a torch op hangs on its own first matmul (the intra-op thread pool does not survive
fork; measured here), so the server imports but never computes, and it never runs submission
code. Each child is forked from the same pristine state; nothing carries over.

Isolation on the warm path equals the cold path's, per submission:

- The server runs inside the same allow-listed bubblewrap root as a cold child (no network; own
  pid/ipc/uts namespaces), keeping only CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN, which it needs
  to give each child its own uid and its own namespaces. bwrap sets no_new_privs, so nothing
  regains them; the server never runs submission code.
- Each child, right after fork: its own mount, IPC, network and uts namespaces (``unshare``), a
  fresh tmpfs of ``sandbox.TMP_QUOTA_MIB`` on /tmp as its working folder (its quota; no other
  submission can fill it), then supplementary groups cleared and its own unprivileged uid (a
  ``UidLease`` held by the parent: children cannot signal each other and do not share an
  RLIMIT_NPROC quota), which drops every capability; a clean environment; the same rlimits and
  seccomp filter as a cold child (applied by ``harness.serve``). When its last process dies, the
  kernel frees its namespaces, and with them its /tmp and SysV IPC objects: nothing of a
  finished submission survives it, and the server has nothing to delete (a submission's deep
  directory tree cannot crash a clean-up that does not exist).
- The parent kills a finished or misbehaving child by uid (``sandbox.kill_uid``), exactly as on
  the cold path, so nothing is left running.

Protocol (control socket, parent -> server): one ``sendmsg`` per spawn carrying a JSON request
``{"uid", "name", "env"}`` and four fds: the spawn's own report socket, the child's wire socket,
its stdout and its stderr. The server answers on the report socket ``{"pid"}`` and later
``{"exit": code, "cpu": seconds}`` (code negative for a signal), then closes it.

The warm path needs root (a uid and namespaces per child). Without root, or when the server
cannot start or fails twice in a row, ``launch`` falls back to the cold path and logs why. The
server is not tied to the thread that started it (bwrap's --die-with-parent is per thread); it
exits when the parent closes the control socket, and its pid namespace takes its children along.
"""

from __future__ import annotations

import array
import gc
import io
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .. import paths
from . import sandbox, scopes

log = logging.getLogger("inferprep.runner.warm")

SERVER_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SYS_ADMIN")
IDLE_BEFORE_SPARE_S = 0.05
WORKDIR = scopes.TMP  # each child's own tmpfs: its working folder



# ---------------------------------------------------------------------------------------------
# server side (runs in its own process; imports torch via the harness but never runs an op)
# ---------------------------------------------------------------------------------------------

def _recv_request(ctl: socket.socket):
    fds = array.array("i")
    msg, anc, _flags, _addr = ctl.recvmsg(65536, socket.CMSG_SPACE(16 * fds.itemsize))
    if not msg:
        return None, []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    return json.loads(msg), list(fds)


def _child(req: dict, wire: int, out: int, err: int) -> None:
    """In the forked child: become the submission's process, then run the harness. Never returns.
    A failure here happens before the harness's hello, so the parent reads it as the platform's."""
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        os.setsid()
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.close(out)
        os.close(err)
        uid = int(req["uid"])
        scopes.isolate(uid, int(req["tmp_mib"]), req.get("keep", []), req.get("cover", []))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)  # from root to a non-zero uid: every capability is dropped here
        os.chdir(WORKDIR)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in req["env"].items()})
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        tempfile.tempdir = WORKDIR
        from .harness import main
        main(wire, scopes=sandbox.SCOPES)
    except BaseException:  # noqa: BLE001
        try:
            import traceback
            traceback.print_exc()
        finally:
            os._exit(70)
    os._exit(0)


def _spare(inherited: list[int]) -> tuple[int, socket.socket]:
    """Fork a spare child now, so that a request does not wait for fork(): the spare blocks until
    the server hands it a request (and the submission's fds), then becomes that child."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            mine.close()
            for fd in inherited:
                os.close(fd)
            req, fds = _recv_request(theirs)
            if req is None or len(fds) != 3:
                os._exit(0)
            theirs.close()
            _child(req, *fds)
        finally:
            os._exit(71)
    theirs.close()
    return pid, mine


def prepare_server() -> None:
    """Everything the server does before its first fork: import torch, numpy, the harness (and
    triton when installed), build the seccomp filter, freeze the heap. No CUDA API is called:
    ``cuda.assert_fork_safe`` then verifies that nothing imported has opened CUDA (a child forked
    from a process with CUDA state cannot use CUDA) and raises ``cuda.CudaForkHazard`` if it has;
    the server then stops and the pool falls back to cold starts, saying why."""
    from . import harness  # noqa: F401  - the point of the server: torch, numpy, harness imported
    from . import cuda, syscalls, triton_launch

    triton_launch.preload()
    cuda.assert_fork_safe()

    syscalls.unavailable()  # import pyseccomp and build the filter once; each child only loads it
    if syscalls.unavailable() is None:
        syscalls.build()
    scopes.libc()
    # Move everything imported so far out of the collector's reach: a collection in a child
    # would otherwise touch every object header and copy-on-write most of the heap (measured:
    # ~100 ms of page faults per child after import torch).
    gc.collect()
    gc.freeze()


def serve(ctl_fd: int) -> None:
    """The fork server's loop. Exits when the parent closes the control socket. Nothing a child
    does can raise out of it: a failure to serve one request is logged and answered by closing
    that request's report socket (the parent reads it as a platform failure and retries)."""
    prepare_server()
    ctl = socket.socket(fileno=ctl_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, int] = {}
    spare = _spare([ctl.fileno(), wake_r, wake_w])
    while True:
        try:
            # Fork the next spare only when idle: fork() of this big process costs tens of ms of
            # CPU, which would otherwise compete with the child that just started (2 cores here).
            ready, _, _ = select.select([ctl, wake_r], [], [], 1.0 if spare is not None else IDLE_BEFORE_SPARE_S)
            if not ready and spare is None:
                spare = _spare([ctl.fileno(), wake_r, wake_w, *children.values()])
                continue
            if wake_r in ready:
                os.read(wake_r, 4096)
            spare = _reap(children, spare)
            if ctl in ready:
                try:
                    req, fds = _recv_request(ctl)
                except (OSError, ValueError):
                    req, fds = None, []
                if req is None:
                    break  # the parent went away
                if len(fds) != 4:
                    for fd in fds:
                        os.close(fd)
                    continue
                if spare is None:
                    spare = _spare([ctl.fileno(), wake_r, wake_w, *children.values(), *fds])
                spare = _hand_over(req, fds, spare, children)
        except Exception:  # noqa: BLE001 - keep serving the others
            import traceback
            traceback.print_exc()
    os._exit(0)


def _reap(children: dict[int, int], spare):
    while True:
        try:
            pid, status, ru = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return spare
        if pid == 0:
            return spare
        if spare is not None and pid == spare[0]:
            spare[1].close()
            spare = None
            continue
        report = children.pop(pid, None)
        if report is not None:
            msg = json.dumps({"exit": os.waitstatus_to_exitcode(status), "cpu": ru.ru_utime + ru.ru_stime}).encode()
            try:
                os.write(report, msg)
            except OSError:
                pass
            os.close(report)


def _hand_over(req: dict, fds: list[int], spare, children: dict[int, int]):
    """Give the spare the request and the submission's fds; returns the next spare (None)."""
    report, wire, out, err = fds
    pid, sock = spare
    try:
        sock.sendmsg([json.dumps(req).encode()],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [wire, out, err]))])
    except OSError:
        os.close(report)  # the parent sees the report closed without an exit: a platform failure
        raise
    finally:
        sock.close()
        for fd in (wire, out, err):
            os.close(fd)
    children[pid] = report
    try:
        os.write(report, json.dumps({"pid": pid}).encode() + b"\n")
    except OSError:
        pass
    return None


def server_main(fd: int) -> None:
    serve(fd)


# ---------------------------------------------------------------------------------------------
# parent side
# ---------------------------------------------------------------------------------------------

class _WarmProc:
    """What ``SubmissionProcess`` needs of ``subprocess.Popen``: a pid and a return code."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None


class WarmLaunched(sandbox.Launched):
    """A child forked by the fork server; same interface as a cold ``sandbox.Launched``."""

    report: socket.socket
    pool: "WarmPool"

    @property
    def signal_128(self) -> bool:
        return False

    def _read_exit(self, timeout: float) -> tuple[int | None, float]:
        self.report.settimeout(timeout)
        buf = b""
        try:
            while True:
                chunk = self.report.recv(4096)
                if not chunk:
                    break
                buf += chunk
        except (socket.timeout, OSError):
            return None, 0.0
        for line in buf.replace(b"}{", b"}\n{").splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "exit" in msg:
                return int(msg["exit"]), float(msg.get("cpu", 0.0))
        # The server closed the report without an exit: it died or could not hand the request
        # over. The platform's failure, never the submission's (its children went with it).
        self.platform_failure = "the warm pool's fork server stopped during this grading"
        return -9, 0.0

    def wait(self, timeout: float) -> tuple[int | None, float]:
        rc, cpu = self._read_exit(timeout)
        if rc is None:
            self.kill()
            rc, cpu = self._read_exit(5.0)
            if rc is None:
                rc = -9
        self.proc.returncode = rc
        return rc, cpu

    def kill(self) -> None:
        if self.lease is not None:
            sandbox.kill_uid(self.lease.uid)

    def cleanup(self) -> None:
        self.kill()
        if self.proc.returncode is None:
            self.wait(5.0)
        if self.lease is not None:
            self.lease.release()
            self.lease = None
        for s in (self.sock, self.report):
            try:
                s.close()
            except OSError:
                pass
        sandbox.remove_tree(self.scratch)
        self.pool.slots.release()


class WarmPool:
    """One fork server per (sandbox mode, device); ``launch`` has ``sandbox.launch``'s signature."""

    def __init__(self, mode: str, device: str, size: int | None = None):
        self.mode, self.device = mode, device
        self.size = size or max(2, os.cpu_count() or 2)
        self.slots = threading.BoundedSemaphore(self.size)
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.ctl: socket.socket | None = None
        self.failures = 0
        self.counter = 0

    # -- server lifecycle ---------------------------------------------------------------------
    def _start(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        boot = (f"import sys; sys.path.insert(0, {str(paths.PACKAGE_DIR.parent)!r}); "
                f"from inferprep.runner.forkserver import server_main; server_main({child.fileno()})")
        argv = [sys.executable, "-I", "-u", "-c", boot]
        if self.mode == "bwrap":
            argv = sandbox.bwrap_argv(self.device, SERVER_CAPS, die_with_parent=False) + ["--chdir", "/tmp", "--"] + argv
        else:
            sandbox.protect_secrets()
        env = sandbox.child_env("/tmp", self.device)
        if self.device != "cuda":
            env["TRITON_INTERPRET"] = "1"  # triton.language is imported (triton_launch.preload) for the interpreter
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=None, env=env, pass_fds=(child.fileno(),),
                                     start_new_session=True, close_fds=True, cwd="/")
        child.close()
        self.ctl = parent

    def note_failure(self, why: str) -> None:
        """A child of this pool failed to set up (or the server died): after two in a row the
        pool is switched off and gradings take the cold path."""
        self.failures += 1
        log.warning("warm pool (%s, %s): %s", self.mode, self.device, why)
        if self.failures >= 2:
            with _POOLS_LOCK:
                _DISABLED[(self.mode, self.device)] = why
                _POOLS.pop((self.mode, self.device), None)
            threading.Thread(target=self.close, daemon=True).start()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        with self.lock:
            if self.ctl is not None:
                self.ctl.close()
                self.ctl = None
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
                self.proc = None

    # -- spawning -----------------------------------------------------------------------------
    def launch(self, device: str = "cpu", mode: str | None = None) -> sandbox.Launched:
        self.slots.acquire()
        try:
            return self._launch()
        except Exception:
            self.slots.release()
            raise

    def _launch(self) -> WarmLaunched:
        lease = sandbox.UidLease()
        scratch = Path(tempfile.mkdtemp(prefix="inferprep-run-"))
        try:
            with self.lock:
                if not self.alive():
                    if self.proc is not None:
                        log.warning("warm pool: the fork server died (exit %s); restarting it", self.proc.returncode)
                    self._start()
                self.counter += 1
                name = f"{lease.uid}-{os.getpid()}-{self.counter}"
                stdout_path, stderr_path = scratch / "stdout", scratch / "stderr"
                parent_sock, child_sock = socket.socketpair()
                report_parent, report_child = socket.socketpair()
                workdir = WORKDIR
                req = {"uid": lease.uid, "name": name, "tmp_mib": sandbox.TMP_QUOTA_MIB,
                       "keep": [str(r) for r in sandbox.allowed_roots()],
                       "cover": sandbox.covered_writable() if self.mode != "bwrap" else [],
                       "env": sandbox.child_env(workdir, self.device)}
                with open(os.open(stdout_path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600), "wb") as out, \
                        open(os.open(stderr_path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600), "wb") as err:
                    fds = [report_child.fileno(), child_sock.fileno(), out.fileno(), err.fileno()]
                    self.ctl.sendmsg([json.dumps(req).encode()],
                                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
                child_sock.close()
                report_child.close()
            report_parent.settimeout(30)
            line = report_parent.recv(4096).split(b"\n", 1)[0]
            pid = int(json.loads(line)["pid"])
        except BaseException:
            lease.release()
            sandbox.remove_tree(scratch)
            raise
        launched = WarmLaunched(_WarmProc(pid), parent_sock, stdout_path, stderr_path, scratch, lease, self.mode,
                                extra={"workdir": workdir, "warm": True}, uid_used=lease.uid)
        launched.report = report_parent
        launched.pool = self
        return launched


_POOLS: dict[tuple[str, str], WarmPool] = {}
_POOLS_LOCK = threading.Lock()
_DISABLED: dict[tuple[str, str], str] = {}


def warm_available() -> str | None:
    """None when the warm path can run here, else the reason it cannot."""
    if os.environ.get("INFERPREP_WARM", "1") in ("0", "false", "no"):
        return "disabled by INFERPREP_WARM=0"
    if os.geteuid() != 0:
        return "the warm pool gives each child its own uid, which needs root"
    return None


def get_pool(mode: str, device: str) -> WarmPool | None:
    key = (mode, device)
    with _POOLS_LOCK:
        if key in _DISABLED:
            return None
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = WarmPool(mode, device)
        return pool


def launch(device: str = "cpu", mode: str | None = None) -> sandbox.Launched:
    """Warm launch with a logged fallback to the cold path (``sandbox.launch``)."""
    mode = sandbox.sandbox_mode(mode)
    why = warm_available()
    if why is None:
        pool = get_pool(mode, device)
        if pool is not None:
            try:
                return pool.launch(device=device, mode=mode)
            except Exception as e:  # noqa: BLE001
                pool.failures += 1
                log.warning("warm pool (%s, %s) failed to spawn (%s: %s); using the cold path", mode, device,
                            type(e).__name__, e)
                if pool.failures >= 2:
                    with _POOLS_LOCK:
                        _DISABLED[(mode, device)] = f"{type(e).__name__}: {e}"
                    pool.close()
    else:
        log.info("warm pool unavailable (%s); using the cold path", why)
    return sandbox.launch(device=device, mode=mode)


def shutdown() -> None:
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for p in pools:
        p.close()
