"""The warm pool: a fork server that has imported torch, numpy and the harness forks a fresh,
isolated child per submission, so a submission does not pay the ~1.3 s ``import torch``.

Why a fork server and not a pre-forked child per slot: a child forked from a process that has
already run a torch op hangs on its own first matmul (the intra-op thread pool does not survive
fork; measured here), so the server imports but never computes, and it never runs submission
code. Each child is forked from the same pristine state; nothing carries over.

Isolation on the warm path equals the cold path's:

- The server runs inside the same bubblewrap sandbox as a cold child (content, home and data
  directory hidden; no network; own pid/ipc/uts namespaces; private /tmp), keeping only
  CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_DAC_OVERRIDE and CAP_FOWNER, which it needs to hand
  each child its own uid and private directory. bwrap sets no_new_privs, so nothing regains them.
- Each child: new session, its own unprivileged uid (a ``UidLease`` held by the parent: children
  cannot signal each other and do not share an RLIMIT_NPROC quota), supplementary groups
  cleared, all capabilities dropped by the uid change, its own 0700 work directory, a clean
  environment, the same rlimits and audit hook as a cold child (applied by ``harness.serve``).
- The parent kills a finished or misbehaving child by uid (``sandbox.kill_uid``), exactly as on
  the cold path, so nothing is left running.

Protocol (control socket, parent -> server): one ``sendmsg`` per spawn carrying a JSON request
``{"uid", "name", "env"}`` and four fds: the spawn's own report socket, the child's wire socket,
its stdout and its stderr. The server answers on the report socket ``{"pid"}`` and later
``{"exit": code, "cpu": seconds}`` (code negative for a signal), then closes it.

The warm path needs root (a uid per child). Without root, or when the server cannot start or
dies twice in a row, ``launch`` falls back to the cold path and logs why.
"""

from __future__ import annotations

import array
import gc
import io
import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .. import paths
from . import sandbox

log = logging.getLogger("inferprep.runner.warm")

SERVER_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER")
WORK_ROOT = "inferprep-warm"
IDLE_BEFORE_SPARE_S = 0.05


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


def _child(req: dict, wire: int, out: int, err: int, work: Path) -> None:
    """In the forked child: become the submission's process, then run the harness. Never returns."""
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
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)  # from root to a non-zero uid: every capability is dropped here
        os.chdir(work)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in req["env"].items()})
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        tempfile.tempdir = str(work)
        from .harness import main
        main(wire)
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
            _child(req, *fds, Path(req["work"]))
        finally:
            os._exit(71)
    theirs.close()
    return pid, mine


def serve(ctl_fd: int) -> None:
    """The fork server's loop. Exits when the parent closes the control socket."""
    from . import harness  # noqa: F401  - the point of the server: torch, numpy, harness imported

    # Move everything imported so far out of the collector's reach: a collection in a child
    # would otherwise touch every object header and copy-on-write most of the heap (measured:
    # ~100 ms of page faults per child after import torch).
    gc.collect()
    gc.freeze()
    ctl = socket.socket(fileno=ctl_fd)
    root = Path(os.environ["INFERPREP_WARM_ROOT"])
    if root.parent == Path("/tmp"):
        # Inside bubblewrap /tmp is this server's private tmpfs: close it, so that a child can
        # write only in its own work directory (nothing planted in /tmp reaches the next child).
        os.chmod("/tmp", 0o755)
    root.mkdir(mode=0o711, exist_ok=True)
    os.chmod(root, 0o711)  # children traverse to their own directory; nobody lists the others
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, tuple[int, Path]] = {}
    reports: set[int] = set()
    spare = _spare([ctl.fileno(), wake_r, wake_w])
    while True:
        # Fork the next spare only when idle: fork() of this big process costs tens of ms of CPU,
        # which would otherwise compete with the child that just started (2 cores here).
        ready, _, _ = select.select([ctl, wake_r], [], [], 1.0 if spare is not None else IDLE_BEFORE_SPARE_S)
        if not ready and spare is None:
            spare = _spare([ctl.fileno(), wake_r, wake_w, *reports])
            continue
        if wake_r in ready:
            os.read(wake_r, 4096)
        while True:
            try:
                pid, status, ru = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if spare is not None and pid == spare[0]:
                spare[1].close()
                spare = None
                continue
            report, work = children.pop(pid, (None, None))
            if report is not None:
                msg = json.dumps({"exit": os.waitstatus_to_exitcode(status),
                                  "cpu": ru.ru_utime + ru.ru_stime}).encode()
                try:
                    os.write(report, msg)
                except OSError:
                    pass
                os.close(report)
                reports.discard(report)
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)
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
            report, wire, out, err = fds
            work = root / str(req["name"])
            work.mkdir(mode=0o700)
            os.chown(work, int(req["uid"]), int(req["uid"]))
            if spare is None:
                spare = _spare([ctl.fileno(), wake_r, wake_w, *reports, *fds])
            pid, sock = spare
            req["work"] = str(work)
            sock.sendmsg([json.dumps(req).encode()],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [wire, out, err]))])
            sock.close()
            for fd in (wire, out, err):
                os.close(fd)
            children[pid] = (report, work)
            reports.add(report)
            try:
                os.write(report, json.dumps({"pid": pid}).encode() + b"\n")
            except OSError:
                pass
            spare = None
    os._exit(0)


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
        return -9, 0.0  # the server died: its children went with it

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
        shutil.rmtree(self.scratch, ignore_errors=True)
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
        # bwrap: the server's private /tmp; without it, a root-owned folder outside the shared /tmp
        self.work_root = f"/tmp/{WORK_ROOT}" if mode == "bwrap" else str(sandbox.state_dir() / WORK_ROOT)

    # -- server lifecycle ---------------------------------------------------------------------
    def _start(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        boot = (f"import sys; sys.path.insert(0, {str(paths.PACKAGE_DIR.parent)!r}); "
                f"from inferprep.runner.forkserver import server_main; server_main({child.fileno()})")
        argv = [sys.executable, "-I", "-u", "-c", boot]
        if self.mode == "bwrap":
            argv = sandbox.bwrap_argv(self.device, SERVER_CAPS) + ["--chdir", "/tmp", "--"] + argv
        else:
            sandbox.protect_secrets()
        env = sandbox.child_env("/tmp", self.device)
        env["INFERPREP_WARM_ROOT"] = self.work_root
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=None, env=env, pass_fds=(child.fileno(),),
                                     start_new_session=True, close_fds=True, cwd="/")
        child.close()
        self.ctl = parent

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
                workdir = f"{self.work_root}/{name}"
                req = {"uid": lease.uid, "name": name, "env": sandbox.child_env(workdir, self.device)}
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
            shutil.rmtree(scratch, ignore_errors=True)
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
