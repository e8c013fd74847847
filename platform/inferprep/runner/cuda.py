"""CUDA in the runner: a fork server that never touches CUDA, a child that opens its own context
and caps its GPU memory before the submission loads, and out-of-memory read as a memory limit.

Why the server must stay CUDA-free: the CUDA driver's state does not survive ``fork``. PyTorch
says so under "Poison fork in multiprocessing" (https://pytorch.org/docs/stable/notes/multiprocessing.html)
and its ``torch.cuda.is_available`` page: the default check calls the CUDA runtime, which "poisons"
later forks, unless ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` makes it ask NVML instead
(https://pytorch.org/docs/stable/generated/torch.cuda.is_available.html). The fork server imports
torch (``import torch`` does not initialise CUDA: ``torch.cuda`` "is lazily initialized",
https://pytorch.org/docs/stable/cuda.html) and ``fork_hazards`` verifies, before the server forks
anything, that neither torch nor anyone else has opened the driver.

The cap: ``torch.cuda.set_per_process_memory_fraction(fraction, device)`` limits the *caching
allocator* of the calling process on that device to ``total_memory * fraction`` bytes, and an
allocation beyond it raises an out-of-memory error in the allocator
(https://pytorch.org/docs/stable/generated/torch.cuda.set_per_process_memory_fraction.html; it
binds one process only, so each child sets its own: pytorch/pytorch#48172). ``memory_cap`` turns
an exercise's ``memory_mib`` into that fraction. What it does not cover: the CUDA context itself
(hundreds of MiB the driver takes outside the allocator), memory a submission gets from the driver
directly (``cudaMalloc`` through ctypes), and a submission that raises its own fraction again:
the cap is in-process, a guard that makes the exercises' memory cases (an N x N score matrix)
bind on CUDA as they do on CPU, not a boundary (``docs/security.md``).

Measured from the trusted side: nothing per submission. NVML's per-process usage
(``nvmlDeviceGetComputeRunningProcesses``) reports host pids the driver sees, which do not match
a container's or a sandbox's pid namespace and is often empty there (NVIDIA/nvidia-docker#179,
#1483); the child's own ``torch.cuda.max_memory_reserved`` is the submission's word. The GPU
check script (``scripts/gpu_check.sh``) samples the whole device's used memory with nvidia-smi
as an upper bound.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import Any

NVIDIA_NODE_PREFIX = "/dev/nvidia"
"""The driver's device nodes (/dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm, ...): opening the
driver (``cuInit``) opens them, so an fd on one means the driver is initialised in this process."""

CHILD_ENV_CUDA = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
"""Set in the environment of a CUDA child and of the CUDA pool's fork server: an
``is_available()`` there asks NVML and does not poison the server's later forks."""

PASS_THROUGH = ("CUDA_VISIBLE_DEVICES",)
"""Host variables a CUDA child keeps (a worker pinned to one GPU stays on it); nothing else of
the host's CUDA or allocator settings (``PYTORCH_CUDA_ALLOC_CONF``) reaches the child."""


class CudaForkHazard(RuntimeError):
    """The fork server's process has CUDA state a forked child could not use."""


def fork_hazards(torch_module: Any = None, proc_fd: str = "/proc/self/fd") -> list[str]:
    """Why forking this process now would hand its children a CUDA state they cannot use, or []
    when it is safe: torch has initialised CUDA (``torch.cuda.is_initialized()``, checked only
    when torch is imported; this never imports it), or a file descriptor of this process is open
    on an NVIDIA device node (``/dev/nvidia*``: the driver was opened, by torch or by anything
    else, Triton included). Reads ``proc_fd`` (a directory of fd symlinks); never calls a CUDA API."""
    reasons: list[str] = []
    if torch_module is None:
        import sys
        torch_module = sys.modules.get("torch")
    if torch_module is not None:
        try:
            if torch_module.cuda.is_initialized():
                reasons.append("torch has initialised CUDA in this process")
        except AttributeError:
            pass
    try:
        names = os.listdir(proc_fd)
    except OSError:
        names = []
    opened = set()
    for name in names:
        try:
            target = os.readlink(os.path.join(proc_fd, name))
        except OSError:
            continue
        if target.startswith(NVIDIA_NODE_PREFIX):
            opened.add(target)
    if opened:
        reasons.append(f"the NVIDIA driver is open in this process ({', '.join(sorted(opened))})")
    return reasons


def assert_fork_safe(torch_module: Any = None, proc_fd: str = "/proc/self/fd") -> None:
    """Raise ``CudaForkHazard`` when ``fork_hazards`` finds any (the warm pool then falls back
    to cold starts, each child its own fresh process, and logs why)."""
    reasons = fork_hazards(torch_module, proc_fd)
    if reasons:
        raise CudaForkHazard("the fork server must not fork children after CUDA is initialised: "
                             + "; ".join(reasons))


def memory_cap(limit_mib: int, total_bytes: int) -> tuple[int, float]:
    """(cap in bytes, fraction for ``set_per_process_memory_fraction``) for an exercise's memory
    limit of ``limit_mib`` MiB on a device of ``total_bytes`` bytes.

    The cap is ``limit_mib * 2**20`` bytes, at most the whole device (fraction 1.0). PyTorch
    computes the allowed bytes as ``fraction * total_memory`` in floating point; the fraction is
    nudged up by one ulp so that the product is never below the cap (a correct solution that uses
    exactly its budget keeps it). Raises ValueError for a limit or a total that is not positive."""
    if not isinstance(limit_mib, int) or isinstance(limit_mib, bool) or limit_mib <= 0:
        raise ValueError(f"the memory limit must be a positive number of MiB, not {limit_mib!r}")
    if not isinstance(total_bytes, int) or isinstance(total_bytes, bool) or total_bytes <= 0:
        raise ValueError(f"the device's total memory must be a positive number of bytes, not {total_bytes!r}")
    cap = limit_mib << 20
    if cap >= total_bytes:
        return total_bytes, 1.0
    fraction = cap / total_bytes
    while fraction * total_bytes < cap:
        fraction = math.nextafter(fraction, 1.0)
    return cap, fraction


@dataclass(frozen=True)
class GpuCap:
    """What a CUDA child set up before the submission loaded (sent in its hello, which the
    harness sends before the submission's code runs, so the parent may believe it)."""

    device_index: int
    name: str
    total_bytes: int
    cap_bytes: int
    fraction: float

    def as_dict(self) -> dict:
        return asdict(self)


def setup_child(memory_mib: int, torch_module: Any = None) -> GpuCap:
    """In a CUDA child, before the submission loads: initialise CUDA (this child's own context,
    the first in its line of processes), then cap the caching allocator on the current device at
    the exercise's memory limit (``memory_cap``). Raises RuntimeError when no CUDA device is
    visible (the platform's failure: the harness reports it in its hello)."""
    torch = torch_module
    if torch is None:
        import torch
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device is visible to the submission's process")
    torch.cuda.init()
    count = torch.cuda.device_count()
    if count != 1:   # child_env shows one device; the cap below binds one device
        raise RuntimeError(f"the submission's process sees {count} CUDA devices, not one: only one is capped")
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    cap, fraction = memory_cap(int(memory_mib), int(props.total_memory))
    torch.cuda.set_per_process_memory_fraction(fraction, index)
    return GpuCap(device_index=int(index), name=str(props.name), total_bytes=int(props.total_memory),
                  cap_bytes=cap, fraction=fraction)


def child_env(host_env: dict[str, str] | None = None) -> dict[str, str]:
    """The variables a CUDA child (and the CUDA pool's fork server) gets on top of
    ``sandbox.child_env``'s: ``CHILD_ENV_CUDA`` and the ``PASS_THROUGH`` ones the host has, with
    ``CUDA_VISIBLE_DEVICES`` narrowed to one device (the host's first, or device 0): the sandbox
    binds every ``/dev/nvidia*`` node, and ``setup_child`` caps one device, so on a worker with
    several GPUs a child that could see them all could allocate on the others without a cap."""
    host = os.environ if host_env is None else host_env
    env = dict(CHILD_ENV_CUDA)
    env.update({k: host[k] for k in PASS_THROUGH if k in host})
    visible = host.get("CUDA_VISIBLE_DEVICES")
    env["CUDA_VISIBLE_DEVICES"] = "0" if visible is None else visible.split(",")[0].strip()
    return env


def is_out_of_memory(exc: BaseException) -> bool:
    """True for the caching allocator's refusal (``torch.OutOfMemoryError``, a RuntimeError whose
    message starts "CUDA out of memory") and the driver's "CUDA error: out of memory"."""
    if any(c.__name__ == "OutOfMemoryError" for c in type(exc).__mro__):
        return True
    text = str(exc)
    return "CUDA out of memory" in text or "CUDA error: out of memory" in text


def cap_from_hello(hello: dict) -> GpuCap | None:
    """The ``GpuCap`` a CUDA child reported in its hello, or None when it is absent or malformed
    (the parent then stops the run as the platform's failure: a CUDA grading without its cap
    does not go ahead)."""
    raw = hello.get("gpu") if isinstance(hello, dict) else None
    if not isinstance(raw, dict):
        return None
    try:
        cap = GpuCap(device_index=raw["device_index"], name=raw["name"], total_bytes=raw["total_bytes"],
                     cap_bytes=raw["cap_bytes"], fraction=raw["fraction"])
    except KeyError:
        return None
    ints = (cap.device_index, cap.total_bytes, cap.cap_bytes)
    if not all(type(v) is int and v >= 0 for v in ints) or type(cap.name) is not str:
        return None
    if type(cap.fraction) not in (int, float) or not 0 < cap.fraction <= 1 or not 0 < cap.cap_bytes <= cap.total_bytes:
        return None
    return cap


def describe_cap(cap: GpuCap) -> str:
    """"GPU memory capped at 384 MiB of 140 GiB (NVIDIA H200, caching allocator)"."""
    return (f"GPU memory capped at {cap.cap_bytes / 2**20:g} MiB of {cap.total_bytes / 2**30:.0f} GiB "
            f"({cap.name}, caching allocator)")
