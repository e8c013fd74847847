"""The kernel-level layer under the namespaces: a seccomp filter the harness loads before the
submission's code runs (built with ``pyseccomp``, a ctypes binding of libseccomp with the API of
libseccomp's own Python bindings).

A loaded filter cannot be removed or loosened by the process or its children (the kernel keeps it
across fork and exec, and no_new_privs is set with it), unlike the harness's audit hook, which a
submission can reach through ``gc`` and switch off. The filter refuses, with ``EPERM``:

- new sockets of any family (``socket``, ``socketpair``) and ``connect``/``bind``/``listen``/
  ``accept``: the child's only socket is the wire to the grader, connected before the filter;
- SysV IPC (shared memory, semaphores, message queues) and POSIX message queues: a channel between
  two submissions or a store that outlives a verdict;
- ``ptrace`` and cross-process memory access (``process_vm_*``, ``pidfd_getfd``, ``kcmp``);
- new namespaces and mounts (``unshare``, ``setns``, ``clone`` with a namespace flag, ``mount``,
  ``umount2``, ``pivot_root``, ``chroot``), kernel modules, ``kexec``, ``reboot``, swap, ``acct``;
- large kernel attack surface a submission never needs: ``bpf``, ``keyctl``/``add_key``/
  ``request_key``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*`` (whose operations bypass
  seccomp's view of socket calls), ``fanotify_init``, ``open_by_handle_at``, ``iopl``/``ioperm``;
- ``memfd_create``/``memfd_secret``: the pages of a memfd that is never mapped count against no
  rlimit (RLIMIT_AS counts mappings), so many of them would hold the host's memory.

``clone3`` answers ``ENOSYS`` (its flags sit behind a pointer seccomp cannot read), which makes
glibc fall back to ``clone``, whose flags the filter does check; Docker's default profile does the
same. Everything else is allowed: this is a deny-list of kernel interfaces, under an allow-listed
filesystem and namespaces; an allow-list of syscalls would break with each new torch build.
A syscall from another architecture's ABI (x32, i386 via ``int 0x80``) kills the process
(libseccomp's default for a foreign architecture).
"""

from __future__ import annotations

import errno
import functools
import os

DENIED = (
    # sockets: no new ones, no new connections
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    # SysV IPC and POSIX message queues
    "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
    "msgget", "msgsnd", "msgrcv", "msgctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    # other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    # namespaces, mounts, the machine
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm",
    # kernel attack surface
    "bpf", "keyctl", "add_key", "request_key", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "fanotify_init",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
    # memory outside RLIMIT_AS: an unmapped memfd's pages belong to no address space
    "memfd_create", "memfd_secret",
)

# clone(2) flags that create namespaces (linux/sched.h)
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
NAMESPACE_FLAGS = (CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                   CLONE_NEWPID, CLONE_NEWNET)


def unavailable() -> str | None:
    """None when a filter can be built here, else why not (no libseccomp, not Linux)."""
    try:
        _module()
    except Exception as e:  # noqa: BLE001 - ImportError, OSError from ctypes, AttributeError
        return f"{type(e).__name__}: {e}"
    return None


@functools.lru_cache(maxsize=1)
def _module():
    import pyseccomp  # loads libseccomp.so.2 with ctypes at import
    return pyseccomp


@functools.lru_cache(maxsize=1)
def build():
    """The filter, built once per process (the warm pool's fork server builds it before forking, so
    each child only loads it). Raises if libseccomp is unavailable or a rule cannot be added."""
    sc = _module()
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    # Synchronise the filter onto every thread of the process (torch may have started some at
    # import); the load fails rather than leave one thread unfiltered.
    f.set_attr(sc.Attr.CTL_TSYNC, 1)
    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED:
        try:
            f.add_rule(deny, name)
        except (ValueError, OSError) as e:
            # a syscall this kernel or libseccomp does not know cannot be called either
            if "unknown" not in str(e).lower() and getattr(e, "errno", None) not in (errno.EINVAL, errno.EFAULT):
                raise
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in NAMESPACE_FLAGS:
        f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    return f


def install() -> None:
    """Load the filter into this process (and, by inheritance, everything it starts). Irreversible.
    Raises on failure: the caller decides whether a run without it may go on."""
    build().load()


def enabled_by_parent() -> bool:
    """The trusted side's switch (``INFERPREP_SECCOMP=0`` turns the layer off, for the tests that
    prove each other layer on its own)."""
    return os.environ.get("INFERPREP_SECCOMP", "1").lower() not in ("0", "false", "no")
