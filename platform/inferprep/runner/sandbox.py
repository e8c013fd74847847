"""Starting the child process: bubblewrap when present, an unprivileged uid, rlimits, seccomp.

The recipe (see DESIGN.md "Sandbox and limits" and docs/security.md): bwrap, started as root,
builds the child's root from an allow-list, never from the host's ``/``: the system's binary and
library folders, the loader's files of /etc, the Python install, the venv and the ``inferprep``
package, all read-only; a minimal /dev (null, zero, full, random, urandom; the NVIDIA nodes on a
CUDA worker); a fresh /proc; a private /tmp of ``TMP_QUOTA_MIB``. Nothing else of the host exists
in there: no /run, /var, /home, /root, no socket file, no data directory, no grader or reference.
It unshares net, pid, ipc and uts, and execs ``setpriv`` to an unprivileged uid with no
capabilities and no_new_privs, then ``python -I``. The harness then loads a seccomp filter
(``syscalls``: no new sockets, no SysV IPC, no ptrace, mount, bpf, ...) before the submission's
code runs. The uid is taken per run from a locked range so that concurrent children neither share
one RLIMIT_NPROC quota nor can signal each other.

Without bubblewrap (absent, or ``INFERPREP_SANDBOX=none``) the child still runs as its own
unprivileged uid when we are root, in its own session, with the same rlimits and the same seccomp
filter, and the secret folders closed to other users (``protect_secrets``); the rest of the host's
files are readable by it. ``describe()`` says so plainly; cohort mode refuses to run like that
unless told ``--allow-unsandboxed``.
"""

from __future__ import annotations

import fcntl
import functools
import itertools
import json
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths
from . import scopes

log = logging.getLogger("inferprep.runner")

UID_BASE = 61000
UID_COUNT = 256


def state_dir() -> Path:
    """A private directory for the runner's own state (uid locks, the warm pool's work root).
    As root: /run/inferprep (root-owned, outside the world-writable /tmp where a submission of the
    unsandboxed mode could plant a symlink); otherwise a per-user folder in the temp dir."""
    base = Path("/run/inferprep") if os.geteuid() == 0 and os.access("/run", os.W_OK) \
        else Path(tempfile.gettempdir()) / f"inferprep-{os.geteuid()}"
    try:
        base.mkdir(mode=0o711, exist_ok=True)
    except FileExistsError:
        pass
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise RuntimeError(f"{base} is not a directory owned by us; refusing to use it")
    os.chmod(base, 0o711)
    return base
ENV_ALLOW = ("LANG", "LC_ALL", "TZ")


@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """True when ``bwrap`` is installed and can create the namespaces we need here."""
    exe = shutil.which("bwrap")
    if not exe:
        return False
    try:
        r = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--dev", "/dev",
                            "--proc", "/proc", "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def sandbox_mode(requested: str | None = None) -> str:
    """``bwrap`` or ``none``: from the argument, else ``INFERPREP_SANDBOX``, else detection."""
    want = (requested or os.environ.get("INFERPREP_SANDBOX") or "auto").lower()
    if want not in ("auto", "bwrap", "none"):
        raise ValueError(f"sandbox must be auto, bwrap or none, not {want!r}")
    if want == "none":
        return "none"
    if bwrap_works():
        return "bwrap"
    if want == "bwrap":
        raise RuntimeError("bubblewrap was asked for but `bwrap` is missing or cannot create namespaces here")
    return "none"


def unreadable_python() -> str | None:
    """Where the Python install or the venv is not traversable by other users (e.g. pyenv under a
    0700 /root), an unprivileged child can only use the modules already imported before it
    dropped privileges. bubblewrap binds the install back; without it, use a world-readable
    Python for the venv (the Makefile and CI prefer Debian's /usr/bin/python3)."""
    for root in {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}:
        for d in [root, *root.parents]:
            try:
                if not d.stat().st_mode & 0o001:
                    return str(d)
            except OSError:
                return str(d)
    return None


def layers(mode: str) -> list[str]:
    """The isolation layers a child gets in ``mode`` on this machine, in words."""
    from . import syscalls
    out = []
    if mode == "bwrap":
        out += ["allow-listed read-only root (no host sockets, data or content)",
                "own network, pid, ipc and uts namespaces", f"private {TMP_QUOTA_MIB} MiB /tmp"]
    elif os.geteuid() == 0:
        out.append(f"own mount, network, ipc and uts namespaces and a private {TMP_QUOTA_MIB} MiB /tmp")
    if os.geteuid() == 0 and shutil.which("setpriv"):
        out.append("unprivileged uid of its own, no capabilities")
    if syscalls.enabled_by_parent() and syscalls.unavailable() is None:
        out.append("seccomp filter (no sockets, SysV IPC, ptrace, mount, bpf)")
    out.append("rlimits (CPU, memory, processes, file size)")
    return out


def describe(mode: str) -> str:
    if mode == "bwrap":
        return "bubblewrap: " + "; ".join(layers(mode))
    who = "an unprivileged uid" if os.geteuid() == 0 else "your own uid"
    blocked = unreadable_python() if os.geteuid() == 0 else None
    if blocked:
        who += f" that cannot read {blocked}, so only modules imported before the submission loads are available"
    return (f"none: bubblewrap is absent, so the submission runs as {who} and sees the host's files "
            f"({'; '.join(layers(mode))}; fine for local practice, install `bubblewrap` for real isolation)")


_LEASES = itertools.count()


def uid_has_tasks(uid: int) -> bool:
    """Any process of ``uid``, zombies included."""
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if p.stat().st_uid == uid:
                    return True
            except FileNotFoundError:
                pass
    return False


class UidLease:
    """An exclusive uid from [UID_BASE, UID_BASE + UID_COUNT), held with a file lock."""

    def __init__(self) -> None:
        lock_dir = state_dir() / "uids"
        lock_dir.mkdir(mode=0o700, exist_ok=True)
        os.chmod(lock_dir, 0o700)  # a submission must not be able to hold (flock) the locks
        # Rotate through the range (a run does not get the uid the previous run just left).
        start = (os.getpid() * 7 + next(_LEASES) * 13) % UID_COUNT
        for i in range(UID_COUNT):
            uid = UID_BASE + (start + i) % UID_COUNT
            fd = os.open(lock_dir / f"{uid}.lock", os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            kill_uid(uid)  # whatever an earlier holder left behind dies before we hand it out
            if uid_has_tasks(uid):
                # zombies not yet reaped by their new parent still count against RLIMIT_NPROC
                # (a fork bomb's leftovers): the next run would start unable to fork; skip it
                os.close(fd)
                continue
            self.uid, self.fd = uid, fd
            return
        raise RuntimeError("all sandbox uids are in use")

    def release(self) -> None:
        kill_uid(self.uid)
        sweep_uid_files(self.uid)
        os.close(self.fd)


SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def covered_writable() -> list[str]:
    """The host's world-writable folders besides /tmp that a child's own mount namespace covers
    with an empty, read-only tmpfs (without bubblewrap; its root has none of them): otherwise
    /dev/shm is a channel between concurrent submissions and /run/lock outlives the verdict."""
    out = []
    for d in SHARED_WRITABLE[1:]:
        try:
            st = os.lstat(d)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            out.append(d)
    return out


def remove_tree(path: str | Path) -> None:
    """Delete a folder a submission may have filled, whatever its shape: never raises. Python's
    ``shutil.rmtree`` recurses once per level, so a 1,500-deep chain of folders makes it raise
    RecursionError (a red-team review crashed the fork server that way); coreutils' ``rm``
    walks with fts, has no depth limit and never follows symlinks."""
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        pass
    if os.path.lexists(path):
        rm = shutil.which("rm") or "/bin/rm"
        try:
            subprocess.run([rm, "-rf", "--one-file-system", "--", str(path)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            log.warning("could not remove %s", path)


def sweep_uid_files(uid: int) -> None:
    """Remove what ``uid`` left in the world-writable folders (only reachable without bubblewrap):
    nothing a submission plants there may reach the next one."""
    for root in SHARED_WRITABLE:
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        for e in entries:
            try:
                if e.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if e.is_dir(follow_symlinks=False):
                    remove_tree(e.path)
                else:
                    os.unlink(e.path)
            except OSError:
                continue


def protect_secrets() -> list[str]:
    """Without bubblewrap, as root: make the secret folders (graders, references, wrong variants,
    the repository's .git) unreachable for other users (``chmod o-rwx``), so the unprivileged
    submission uid cannot read them by any route the audit hook does not see (dir_fd opens,
    torch.from_file, _posixsubprocess). Returns the folders changed."""
    changed = []
    if os.geteuid() != 0:
        return changed
    targets = list(secret_paths())
    checkout = paths.PACKAGE_DIR.parent.parent
    if (checkout / ".git").exists():
        targets.append(checkout / ".git")
    for d in targets:
        try:
            mode = os.lstat(d).st_mode
            if stat.S_ISDIR(mode) and mode & 0o007:
                os.chmod(d, mode & ~0o007)
                changed.append(str(d))
        except OSError:
            continue
    return changed


def _task_dead(task_dir: Path) -> bool:
    try:
        return (task_dir / "stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def _is_zombie(proc_dir: Path) -> bool:
    """True when no thread of the process is alive. Not just the leader's state: a leader thread
    that ended with SYS_exit (not exit_group) reads "Z" in /proc/<pid>/stat while its other
    threads run on (a red-team review hid a process from ``kill_uid`` that way)."""
    if not _task_dead(proc_dir):
        return False
    try:
        tasks = list((proc_dir / "task").iterdir())
    except OSError:
        return True
    return all(_task_dead(t) for t in tasks)


def uid_processes(uid: int) -> list[int]:
    """Live (non-zombie) processes owned by ``uid``."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if p.stat().st_uid == uid and not _is_zombie(p):
                    out.append(int(p.name))
            except FileNotFoundError:
                pass
    return out


_TICK = os.sysconf("SC_CLK_TCK")


def pid_cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system, with its reaped children's) of process ``pid``; None if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / _TICK  # utime, stime, cutime, cstime
    except (OSError, IndexError, ValueError):
        return None


def uid_cpu_seconds(uid: int) -> float:
    """CPU seconds (user + system) of the live processes of ``uid``: a fork loop's whole tree."""
    return sum(s for pid in uid_processes(uid) if (s := pid_cpu_seconds(pid)) is not None)


def kill_uid(uid: int) -> int:
    """SIGKILL every process owned by ``uid`` (what a fork bomb or a setsid escape left behind).

    ``kill(-1, SIGKILL)`` issued *as that uid* reaches all of its processes in one atomic sweep of
    the kernel's task list, so a fork loop cannot outrun it (scanning /proc can be outrun)."""
    rounds = 0
    setpriv, kill = shutil.which("setpriv"), shutil.which("kill")
    while uid_processes(uid) and rounds < 20:
        rounds += 1
        if os.geteuid() == 0 and setpriv and kill:
            subprocess.run([setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", kill, "-9", "-1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        else:
            for pid in uid_processes(uid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        time.sleep(0.005 * rounds)
    return rounds


def hidden_paths() -> list[Path]:
    """Paths the child must not read, wherever the content lives."""
    root = paths.content_root()
    hide = [root] if paths.is_checkout(root) else paths.secret_dirs()
    checkout = paths.PACKAGE_DIR.parent.parent
    if paths.is_checkout(checkout):
        hide.append(checkout)  # the repository (and its .git) even when content comes from elsewhere
    data = os.environ.get("INFERPREP_DATA_DIR")
    if data:
        hide.append(Path(data))
    try:
        from platformdirs import user_data_path
        hide.append(user_data_path("inferprep"))
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        pass
    home = Path.home()
    if home != Path("/"):
        hide.append(home)
    return [p.resolve() for p in hide] + secret_paths()


def secret_paths() -> list[Path]:
    """Always hidden, even inside a revealed tree: the secret folders of every copy of the content
    (the content root's, and an installed wheel's ``inferprep/_content`` in any site-packages)."""
    import site
    out = list(paths.secret_dirs())
    bases = [paths.PACKAGE_DIR / "_content"]
    for sp in site.getsitepackages() + [site.getusersitepackages()]:
        bases.append(Path(sp) / "inferprep" / "_content")
    for b in bases:
        out += [b / "graders", b / "reference", b / "tests"]
    return sorted({p.resolve() for p in out if p.exists()})


def revealed_paths() -> list[Path]:
    """What the child needs even where it lies under a hidden path: Python, the venv, the harness."""
    want = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
            Path(os.path.realpath(sys.executable)).parent.parent, paths.PACKAGE_DIR}
    return sorted({p.resolve() for p in want})


def _under(p: Path, roots: list[Path]) -> bool:
    return any(p == r or r in p.parents for r in roots)


@dataclass
class Launched:
    proc: subprocess.Popen
    sock: socket.socket
    stdout_path: Path
    stderr_path: Path
    scratch: Path
    lease: UidLease | None
    mode: str
    extra: dict = field(default_factory=dict)
    uid_used: int | None = None
    platform_failure: str | None = None
    """Set when the platform (not the submission) ended the run: the warm pool's server died."""

    @property
    def signal_128(self) -> bool:
        """bwrap reports a child killed by signal N as exit code 128 + N."""
        return self.mode == "bwrap"

    def wait(self, timeout: float) -> tuple[int | None, float]:
        """(return code, CPU seconds of the child tree) after it exits or is killed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status, ru = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                return self.proc.returncode, ru.ru_utime + ru.ru_stime
            time.sleep(0.005)
        self.kill()
        pid, status, ru = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        return self.proc.returncode, ru.ru_utime + ru.ru_stime

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.lease is not None:
            kill_uid(self.lease.uid)

    def cleanup(self) -> None:
        self.kill()
        if self.proc.returncode is None:
            try:
                _, status, _ = os.wait4(self.proc.pid, 0)
                self.proc.returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                self.proc.returncode = -9
        if self.lease is not None:
            self.lease.release()
            self.lease = None
        try:
            self.sock.close()
        finally:
            work = self.scratch / "workdir"
            if work.is_symlink():  # the unsandboxed cold path's working folder, owned by the child
                remove_tree(os.readlink(work))
            remove_tree(self.scratch)


def seccomp_flag() -> str:
    """"1" when the child must load the seccomp filter (on unless INFERPREP_SECCOMP=0 in the
    trusted parent, and libseccomp is here)."""
    from . import syscalls
    return "1" if syscalls.enabled_by_parent() and syscalls.unavailable() is None else "0"


def child_env(workdir: str, device: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_ALLOW if k in os.environ}
    env.update(PATH="/usr/local/bin:/usr/bin:/bin", HOME=workdir, TMPDIR=workdir,
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0", INFERPREP_SECCOMP=seccomp_flag())
    if device != "cuda":
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        from . import cuda
        env.update(cuda.child_env())
        env["INFERPREP_DEVICE"] = "cuda"  # the harness opens CUDA and caps it before its hello
    return env


def harness_argv(fd: int, scopes: list[str] = ()) -> list[str]:
    boot = (f"import sys; sys.path.insert(0, {str(paths.PACKAGE_DIR.parent)!r}); "
            f"from inferprep.runner.harness import main; main({fd}, {list(scopes)!r})")
    return [sys.executable, "-I", "-u", "-c", boot]


SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""The system's binary and library folders, bound read-only (a merged-/usr system's /bin, /lib,
... are symlinks into /usr and are recreated as symlinks)."""
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives")
"""What of /etc the dynamic loader and the C library read; nothing else of /etc (no passwd, no
hosts, no credentials)."""
DEV_NODES = ("null", "zero", "full", "random", "urandom")
CUDA_SYS = ("/sys/bus/pci", "/sys/devices", "/sys/module/nvidia", "/sys/class/drm")
"""What the CUDA driver and NVML read of /sys on a GPU worker (PCI topology, NUMA affinity)."""
TMP_QUOTA_MIB = 128
"""Each submission's private /tmp (its working folder): a tmpfs of this size, its own on both
the cold and the warm path."""


@functools.lru_cache(maxsize=1)
def _allowed_roots() -> tuple[Path, ...]:
    roots = sorted((p for p in revealed_paths() if p.exists()), key=lambda p: len(p.parts))
    system = [Path(d) for d in SYSTEM_DIRS if Path(d).is_dir()]
    out: list[Path] = []
    for r in roots:
        if not _under(r, out) and not _under(r, system):
            out.append(r)
    return tuple(out)


def allowed_roots() -> list[Path]:
    """Folders the child sees, read-only, besides the system folders: ``revealed_paths()`` (the
    Python install, the venv, the ``inferprep`` package) minus those inside another or inside a
    system folder. Nothing else of the host (no /run, /var, /home, /root, /srv, /mnt, no data
    directory, no checkout beyond the package, no socket files). Computed once per process: every
    launch, warm or cold, asks for it."""
    return list(_allowed_roots())


def _dir_chain(target: Path, made: set[Path]) -> list[str]:
    """``--dir`` entries (mode 0755) for the parents of ``target`` that bwrap would otherwise
    create with mode 0700 (unreadable to the child's uid)."""
    argv: list[str] = []
    for a in reversed(target.parents):
        if a != Path("/") and a not in made:
            made.add(a)
            argv += ["--perms", "0755", "--dir", str(a)]
    return argv


def bwrap_argv(device: str, caps: tuple[str, ...] = (), die_with_parent: bool = True) -> list[str]:
    """The bubblewrap prefix: an allow-listed root (the system folders, a few loader files of
    /etc, the Python install, the venv and the package, all read-only; a minimal /dev; a fresh
    /proc; a private, size-capped /tmp), no network, own pid/ipc/uts namespaces. ``caps`` are kept
    (the warm pool's fork server needs CAP_SETUID and friends to give each child its own uid and
    CAP_SYS_ADMIN to give it its own namespaces; the children drop them all).
    ``die_with_parent`` ties bwrap to the *thread* that started it (PR_SET_PDEATHSIG is per
    thread): right for a cold child, wrong for the long-lived fork server."""
    argv = [shutil.which("bwrap"), "--new-session",
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if die_with_parent:
        argv.insert(1, "--die-with-parent")
    for d in SYSTEM_DIRS:
        p = Path(d)
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), d]
        elif p.is_dir():
            argv += ["--ro-bind", d, d]
    # /tmp first: an allowed root under it (a checkout cloned into /tmp) is bound on top
    argv += ["--size", str(TMP_QUOTA_MIB << 20), "--perms", "01777", "--tmpfs", "/tmp"]
    made: set[Path] = set()
    argv += ["--perms", "0755", "--dir", "/etc"]
    made.add(Path("/etc"))
    for f in ETC_FILES:
        if os.path.lexists(f):
            argv += ["--ro-bind", f, f]
    for r in allowed_roots():
        argv += _dir_chain(r, made) + ["--ro-bind", str(r), str(r)]
    allowed = allowed_roots() + [Path(d).resolve() for d in SYSTEM_DIRS if Path(d).is_dir()]
    for sec in secret_paths():  # a secret inside an allowed tree (a wheel's content in the venv or /usr)
        if _under(sec, allowed):
            argv += ["--tmpfs", str(sec)]
    argv += ["--perms", "0755", "--dir", "/dev"]
    for node in DEV_NODES:
        argv += ["--dev-bind", f"/dev/{node}", f"/dev/{node}"]
    for i, name in enumerate(("stdin", "stdout", "stderr")):
        argv += ["--symlink", f"/proc/self/fd/{i}", f"/dev/{name}"]
    argv += ["--symlink", "/proc/self/fd", "/dev/fd", "--proc", "/proc"]
    if device == "cuda":
        for dev in sorted(Path("/dev").glob("nvidia*")):
            argv += ["--dev-bind", str(dev), str(dev)]
        for d in CUDA_SYS:
            argv += ["--ro-bind-try", d, d]
    return argv


SCOPES = [*scopes.NAMES, f"tmp {TMP_QUOTA_MIB} MiB"]


def scopes_wrapper(uid: int) -> list[str]:
    """argv prefix giving an unsandboxed cold child (started as root) the same scopes as the warm
    pool's children (``scopes.isolate``: own mount, IPC, network and uts namespaces, a private
    /tmp with its quota, the host's other writable folders covered), then exec'ing the rest."""
    spec = {"uid": uid, "tmp_mib": TMP_QUOTA_MIB, "keep": [str(r) for r in allowed_roots()],
            "cover": covered_writable()}
    boot = (f"import sys; sys.path.insert(0, {str(paths.PACKAGE_DIR.parent)!r}); "
            "from inferprep.runner.scopes import main; main()")
    return [sys.executable, "-I", "-S", "-c", boot, json.dumps(spec)]


def launch(device: str = "cpu", mode: str | None = None) -> Launched:
    """Start a cold child running the harness; returns once the process exists (not yet ready)."""
    mode = sandbox_mode(mode)
    scratch = Path(tempfile.mkdtemp(prefix="inferprep-run-"))  # 0700: stdout/stderr of this run only
    stdout_path, stderr_path = scratch / "stdout", scratch / "stderr"
    parent_sock, child_sock = socket.socketpair()
    lease = UidLease() if os.geteuid() == 0 and shutil.which("setpriv") else None
    drop = ([shutil.which("setpriv"), f"--reuid={lease.uid}", f"--regid={lease.uid}", "--clear-groups",
             "--no-new-privs", "--inh-caps=-all"] if lease else [])
    fd = child_sock.fileno()
    if mode == "bwrap":
        workdir = "/tmp"
        argv = bwrap_argv(device) + ["--chdir", workdir, "--"] + drop + harness_argv(fd, ["pid", *SCOPES[1:]])
        cwd = "/"
    elif lease:
        # Without bubblewrap but as root: the same per-child scopes as the warm pool gives (own
        # mount, IPC, network and uts namespaces; a private /tmp with its quota), by util-linux.
        protect_secrets()
        workdir = "/tmp"
        argv = scopes_wrapper(lease.uid) + drop + harness_argv(fd, SCOPES)
        cwd = "/"
    else:
        protect_secrets()
        work = Path(tempfile.mkdtemp(prefix="inferprep-work-"))
        if lease:
            os.chown(work, lease.uid, lease.uid)
        (scratch / "workdir").symlink_to(work)  # removed with the scratch folder
        workdir = str(work)
        argv = drop + harness_argv(fd)
        cwd = workdir
    with open(os.open(stdout_path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600), "wb") as out, \
            open(os.open(stderr_path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600), "wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd,
                                env=child_env(workdir, device), pass_fds=(fd,), start_new_session=True,
                                close_fds=True)
    child_sock.close()
    return Launched(proc, parent_sock, stdout_path, stderr_path, scratch, lease, mode,
                    extra={"workdir": workdir}, uid_used=lease.uid if lease else None)
