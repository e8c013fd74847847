"""A child's own scopes, made as root right before it drops to its uid: its own mount, IPC,
network and uts namespaces, a private tmpfs on /tmp (its working folder and its quota), and the
host's other world-writable folders (/dev/shm, /var/tmp, /run/lock, where they exist) covered by
empty read-only tmpfs. When the child's last process dies the kernel frees the namespaces, the
tmpfs and the SysV IPC objects: nothing of a finished submission survives it.

Used by the warm pool's fork server right after fork (``isolate``) and, without bubblewrap, by the
cold path as a tiny launcher (``python -I -S -c ... main``) that isolates and then execs
``setpriv``. Standard library only, so the launcher starts in milliseconds.

What the child must still read (the Python install, the venv, the ``inferprep`` package) may lie
under a folder this covers (a checkout cloned into /tmp): such folders are bound back, read-only,
at their own paths inside the new tmpfs.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x04000000, 0x08000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
TMP = "/tmp"
TMP_INODES = 16384
NAMES = ["mount", "ipc", "net", "uts"]

_LIBC = None


def libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _check(rc: int, what: str) -> None:
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def _mount(source, target: str, fstype, flags: int, data=None) -> None:
    enc = (lambda v: v.encode() if isinstance(v, str) else v)
    _check(libc().mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def isolate(uid: int, tmp_mib: int, keep: list[str] = (), cover: list[str] = ()) -> None:
    """Give the calling process (root, single-threaded) its own scopes; ``keep``: folders to bind
    back read-only where a new tmpfs hides them; ``cover``: world-writable host folders to hide.
    Raises OSError if the kernel refuses anything."""
    _check(libc().unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS), "unshare")
    # Mounts made from here on stay in this namespace (without bwrap, / is shared with the host).
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    covered = [TMP, *cover]
    # Opened in the new namespace, before the tmpfs hides them: the bind sources.
    fds = {r: os.open(r, os.O_PATH | os.O_DIRECTORY) for r in keep if any(_under(r, c) for c in covered)}
    try:
        _mount("tmpfs", TMP, "tmpfs", MS_NOSUID | MS_NODEV,
               f"size={int(tmp_mib)}m,nr_inodes={TMP_INODES},mode=0700,uid={uid},gid={uid}")
        for d in cover:
            _mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,nr_inodes=256,mode=0755")
        for r, fd in fds.items():
            os.makedirs(r, mode=0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", r, None, MS_BIND | MS_REC)
            _mount(None, r, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        for d in cover:
            _mount(None, d, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    finally:
        for fd in fds.values():
            os.close(fd)


def main() -> None:
    """``python -I -S -c "...; main()" '<json>' argv...``: isolate, cd /tmp, exec argv."""
    spec = json.loads(sys.argv[1])
    os.umask(0o022)
    isolate(int(spec["uid"]), int(spec["tmp_mib"]), spec.get("keep", []), spec.get("cover", []))
    os.chdir(TMP)
    os.execv(sys.argv[2], sys.argv[2:])
