"""CUDA grading that holds (issue 19): the fork server stays CUDA-free, each CUDA child caps its
GPU memory before the submission loads, an out-of-memory error is a memory limit, and outputs are
checked on the grading's device.

Most of this runs on CPU: the cap's arithmetic, the fork-hazard check (a fake torch and a fake
/proc/self/fd), the server's start-up with every CUDA entry point of torch replaced by one that
records the call, and the whole parent <-> child protocol of a CUDA child whose CUDA set-up is
replaced by a fake. The tests at the end need a CUDA device and skip without one, saying so.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from inferprep import catalog, paths
from inferprep.grading.checks import WrongAnswer, expect_device, expect_tensor
from inferprep.runner import cuda, sandbox
from inferprep.runner.harness import _exc_message
from inferprep.runner.process import RunFailed, SubmissionProcess
from inferprep.verdict import Status

NO_CUDA = "needs a CUDA device (none here); run scripts/gpu_check.sh on a GPU machine"
PLATFORM = str(paths.PACKAGE_DIR.parent)


# -- the cap --------------------------------------------------------------------------------------

@pytest.mark.parametrize("limit_mib,total", [(384, 150_754_820_096), (1024, 85_024_112_640), (1, 3), (2048, (1 << 34) + 7)])
def test_memory_cap_is_the_limit_and_torch_allows_at_least_it(limit_mib, total):
    cap, fraction = cuda.memory_cap(limit_mib, total)
    if (limit_mib << 20) >= total:
        assert (cap, fraction) == (total, 1.0)
    else:
        assert cap == limit_mib << 20
        assert 0 < fraction < 1
        allowed = fraction * total  # what the caching allocator computes from the fraction
        assert allowed >= cap
        assert allowed - cap < 1e-3 * (1 << 20)  # and not meaningfully more


@pytest.mark.parametrize("limit_mib,total", [(0, 1 << 30), (-5, 1 << 30), (384, 0), (1.5, 1 << 30), (True, 1 << 30)])
def test_memory_cap_rejects_nonsense(limit_mib, total):
    with pytest.raises(ValueError):
        cuda.memory_cap(limit_mib, total)


class FakeCudaTorch:
    """torch as far as ``cuda.setup_child`` uses it; records the calls in order."""

    def __init__(self, available: bool = True, total: int = 150_754_820_096, count: int = 1):
        self.calls: list[tuple] = []
        outer = self

        class _Cuda:
            @staticmethod
            def is_available():
                outer.calls.append(("is_available",))
                return available

            @staticmethod
            def init():
                outer.calls.append(("init",))

            @staticmethod
            def device_count():
                outer.calls.append(("device_count",))
                return count

            @staticmethod
            def current_device():
                outer.calls.append(("current_device",))
                return 0

            @staticmethod
            def get_device_properties(i):
                outer.calls.append(("get_device_properties", i))
                return SimpleNamespace(total_memory=total, name="NVIDIA H200")

            @staticmethod
            def set_per_process_memory_fraction(fraction, device):
                outer.calls.append(("set_per_process_memory_fraction", fraction, device))

        self.cuda = _Cuda()


def test_setup_child_initialises_then_caps_the_current_device():
    fake = FakeCudaTorch()
    cap = cuda.setup_child(384, fake)
    names = [c[0] for c in fake.calls]
    assert names == ["is_available", "init", "device_count", "current_device", "get_device_properties",
                     "set_per_process_memory_fraction"]
    assert fake.calls[-1] == ("set_per_process_memory_fraction", cap.fraction, 0)
    assert cap.cap_bytes == 384 << 20 and cap.total_bytes == 150_754_820_096
    assert cuda.describe_cap(cap) == "GPU memory capped at 384 MiB of 140 GiB (NVIDIA H200, caching allocator)"


def test_setup_child_refuses_to_cap_one_of_several_visible_devices():
    """The cap binds one device; a child that sees two could allocate on the other without one."""
    fake = FakeCudaTorch(count=2)
    with pytest.raises(RuntimeError, match="sees 2 CUDA devices"):
        cuda.setup_child(384, fake)
    assert "set_per_process_memory_fraction" not in [c[0] for c in fake.calls]


@pytest.mark.parametrize("host, shown", [({}, "0"), ({"CUDA_VISIBLE_DEVICES": "3"}, "3"),
                                         ({"CUDA_VISIBLE_DEVICES": "2, 5"}, "2"), ({"CUDA_VISIBLE_DEVICES": ""}, "")])
def test_a_cuda_child_sees_one_device(host, shown):
    assert cuda.child_env(host)["CUDA_VISIBLE_DEVICES"] == shown


def test_setup_child_without_a_device_raises_before_touching_cuda():
    fake = FakeCudaTorch(available=False)
    with pytest.raises(RuntimeError, match="no CUDA device"):
        cuda.setup_child(384, fake)
    assert fake.calls == [("is_available",)]


# -- the fork server never opens CUDA ------------------------------------------------------------

def _fd_dir(tmp_path: Path, targets: list[str]) -> str:
    d = tmp_path / "fd"
    d.mkdir()
    for i, t in enumerate(targets):
        os.symlink(t, d / str(i))
    return str(d)


def test_fork_hazards_sees_torch_initialised_and_driver_fds(tmp_path):
    clean = _fd_dir(tmp_path, ["/dev/null", "socket:[1234]", "/usr/lib/libc.so.6"])
    not_init = SimpleNamespace(cuda=SimpleNamespace(is_initialized=lambda: False))
    init = SimpleNamespace(cuda=SimpleNamespace(is_initialized=lambda: True))
    assert cuda.fork_hazards(not_init, clean) == []
    assert cuda.fork_hazards(init, clean) == ["torch has initialised CUDA in this process"]
    (tmp_path / "x").mkdir()
    dirty = _fd_dir(tmp_path / "x", ["/dev/null", "/dev/nvidiactl", "/dev/nvidia-uvm"])
    [why] = cuda.fork_hazards(not_init, dirty)
    assert why == "the NVIDIA driver is open in this process (/dev/nvidia-uvm, /dev/nvidiactl)"
    with pytest.raises(cuda.CudaForkHazard, match="must not fork"):
        cuda.assert_fork_safe(init, dirty)
    cuda.assert_fork_safe(not_init, clean)


SERVER_PROBE = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {platform!r})
    import torch
    calls = []
    def record(name):
        def f(*a, **k):
            calls.append(name)
            raise RuntimeError("the fork server called " + name)
        return f
    for name in ("is_available", "init", "_lazy_init", "device_count", "current_device",
                 "get_device_properties", "set_per_process_memory_fraction", "synchronize", "mem_get_info"):
        setattr(torch.cuda, name, record("torch.cuda." + name))
    for name in ("_cuda_getDeviceCount", "_cuda_init"):
        if hasattr(torch._C, name):
            setattr(torch._C, name, record("torch._C." + name))
    {before}
    from inferprep.runner import forkserver
    error = None
    try:
        forkserver.prepare_server()
    except Exception as e:
        error = type(e).__name__ + ": " + str(e)
    print(json.dumps({{"calls": calls, "initialized": torch.cuda.is_initialized(), "error": error}}))
""")


def _probe_server(before: str = "") -> dict:
    code = SERVER_PROBE.format(platform=PLATFORM, before=before)
    env = sandbox.child_env("/tmp", "cuda") | {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_fork_server_start_up_calls_no_cuda_api():
    """The server's whole start-up (torch, numpy, the harness, triton, the seccomp filter) with
    every CUDA entry point of torch replaced by one that records the call and raises: none is
    called, CUDA is not initialised, and the fork-safety check passes."""
    got = _probe_server()
    assert got == {"calls": [], "initialized": False, "error": None}


def test_the_fork_server_refuses_to_start_once_cuda_is_initialised():
    got = _probe_server(before="torch.cuda.is_initialized = lambda: True")
    assert got["error"].startswith("CudaForkHazard: the fork server must not fork children after CUDA is initialised")


# -- the child's environment ---------------------------------------------------------------------

def test_child_env_for_cuda_and_for_cpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    monkeypatch.setenv("SECRET_TOKEN", "xyz")
    env = sandbox.child_env("/tmp", "cuda")
    assert env["INFERPREP_DEVICE"] == "cuda"
    assert env["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"
    assert env["CUDA_VISIBLE_DEVICES"] == "3"
    assert "PYTORCH_CUDA_ALLOC_CONF" not in env and "SECRET_TOKEN" not in env
    cpu = sandbox.child_env("/tmp", "cpu")
    assert cpu["CUDA_VISIBLE_DEVICES"] == "" and "INFERPREP_DEVICE" not in cpu
    assert "PYTORCH_NVML_BASED_CUDA_CHECK" not in cpu


# -- out of memory reads as a memory limit --------------------------------------------------------

def test_cuda_out_of_memory_is_a_memory_error_kind():
    oom = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 576.00 MiB. GPU 0 has a total capacity "
                                 "of 139.81 GiB of which 120.00 GiB is free. Of the allocated memory 2.00 MiB is "
                                 "allocated by PyTorch")
    assert cuda.is_out_of_memory(oom)
    assert cuda.is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert not cuda.is_out_of_memory(RuntimeError("shape mismatch"))
    assert _exc_message(oom)["kind"] == "memory"
    assert _exc_message(RuntimeError("shape mismatch"))["kind"] == "error"


# -- the CUDA child's protocol, with a fake CUDA set-up -------------------------------------------

FAKE_CHILD = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {platform!r})
    from inferprep.runner import cuda, harness
    def fake_setup(memory_mib, torch_module=None):
        if {fail!r}:
            raise RuntimeError("the driver said no")
        os.environ["INFERPREP_TEST_CAPPED_MIB"] = str(memory_mib)
        cap, fraction = cuda.memory_cap(memory_mib, 1 << 34)
        return cuda.GpuCap(0, "Fake GPU", 1 << 34, cap, fraction)
    cuda.setup_child = fake_setup
    harness.main({fd})
""")


def _fake_cuda_launcher(fail: bool = False, cuda_env: bool = True):
    def launch(device: str = "cpu", mode: str | None = None) -> sandbox.Launched:
        scratch = Path(tempfile.mkdtemp(prefix="inferprep-test-"))
        work = scratch / "work"
        work.mkdir()
        parent_sock, child_sock = socket.socketpair()
        fd = child_sock.fileno()
        env = sandbox.child_env(str(work), "cuda")
        if not cuda_env:
            env.pop("INFERPREP_DEVICE")
        with open(scratch / "stdout", "wb") as out, open(scratch / "stderr", "wb") as err:
            proc = subprocess.Popen([sys.executable, "-I", "-u", "-c", FAKE_CHILD.format(platform=PLATFORM, fail=fail, fd=fd)],
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=work, env=env,
                                    pass_fds=(fd,), start_new_session=True, close_fds=True)
        child_sock.close()
        return sandbox.Launched(proc, parent_sock, scratch / "stdout", scratch / "stderr", scratch, None, "none",
                                extra={"workdir": str(work)})
    return launch


SUBMISSION = textwrap.dedent("""
    import os
    import torch
    CAPPED_BEFORE_IMPORT = os.environ.get("INFERPREP_TEST_CAPPED_MIB")
    def capped_before_import():
        return CAPPED_BEFORE_IMPORT
    def allocate_scores():
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 576.00 MiB")
""")


def _process(launcher) -> SubmissionProcess:
    return SubmissionProcess(SUBMISSION, ["capped_before_import", "allocate_scores"], time_s=20, memory_mib=384,
                             device="cuda", mode="none", launcher=launcher)


def test_a_cuda_child_caps_before_the_submission_loads_and_oom_is_a_memory_limit():
    proc = _process(_fake_cuda_launcher())
    try:
        assert proc.start()["op"] == "ready"
        assert proc.gpu_cap == cuda.GpuCap(0, "Fake GPU", 1 << 34, 384 << 20, proc.gpu_cap.fraction)
        assert proc.call("capped_before_import") == "384"
        with pytest.raises(RunFailed) as e:
            proc.call("allocate_scores")
        assert e.value.status == Status.MEMORY_LIMIT
        assert "CUDA out of memory" in str(e.value)
        assert proc.platform_failure is None
    finally:
        proc.close()


def test_a_cuda_set_up_that_fails_is_the_platforms_failure():
    proc = _process(_fake_cuda_launcher(fail=True))
    try:
        with pytest.raises(RunFailed) as e:
            proc.start()
        assert e.value.status == Status.INTERNAL_ERROR
        assert "cannot set up CUDA: RuntimeError: the driver said no" in proc.platform_failure
    finally:
        proc.close()


def test_a_cuda_grading_whose_child_reports_no_cap_does_not_go_ahead():
    proc = _process(_fake_cuda_launcher(cuda_env=False))
    try:
        with pytest.raises(RunFailed) as e:
            proc.start()
        assert e.value.status == Status.INTERNAL_ERROR
        assert proc.platform_failure == "the child process did not cap its GPU memory"
    finally:
        proc.close()


@pytest.mark.parametrize("hello", [{}, {"gpu": None}, {"gpu": {"device_index": 0}},
                                   {"gpu": {"device_index": 0, "name": "x", "total_bytes": 10, "cap_bytes": 20, "fraction": 1.0}},
                                   {"gpu": {"device_index": 0, "name": "x", "total_bytes": 10, "cap_bytes": 5, "fraction": 0.0}},
                                   {"gpu": {"device_index": "0", "name": "x", "total_bytes": 10, "cap_bytes": 5, "fraction": 0.5}}])
def test_a_malformed_cap_in_the_hello_is_no_cap(hello):
    assert cuda.cap_from_hello({"op": "hello", **hello}) is None


# -- outputs on the grading's device --------------------------------------------------------------

def test_a_cpu_tensor_in_a_cuda_grading_is_a_wrong_answer_that_says_so():
    out = torch.zeros(2, 3)
    with pytest.raises(WrongAnswer) as e:
        expect_device(out, "cuda")
    assert str(e.value) == ("output: a tensor on cpu, but this grading runs on cuda: return it on the device of "
                            "its inputs (cuda), without copying it to another device")
    with pytest.raises(WrongAnswer, match=r"^out\[1\]\['lse'\]: a tensor on cpu, but this grading runs on cuda"):
        expect_device((3, {"lse": out}), torch.device("cuda", 0), name="out")
    assert expect_device((out, [1, "x"], {"a": out}), "cpu") is not None


def test_expect_tensor_names_the_device_it_wanted():
    want = torch.empty(2, 3, device="meta")  # a device this machine has, standing in for cuda
    with pytest.raises(WrongAnswer, match="^out: a tensor on cpu, but this grading runs on meta"):
        expect_tensor(torch.zeros(2, 3), want, name="out")


# -- on a CUDA device (skipped here) ---------------------------------------------------------------

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)


def _grade(slug: str, code: str):
    from inferprep.runner import judge
    return judge.grade(catalog.get(slug), code, device="cuda", fail_fast=True, salt=7)


@cuda_only
def test_on_cuda_the_reference_passes_under_its_cap():
    ex = catalog.get("flash-attention-forward")
    v = _grade(ex.slug, ex.reference_path.read_text())
    assert v.ok, v.message
    assert "GPU memory capped at 384 MiB" in v.sandbox


@cuda_only
@pytest.mark.parametrize("variant", ["materialize_scores.py", "rowblock_softmax.py"])
def test_on_cuda_the_n_by_n_variants_hit_the_memory_limit(variant):
    ex = catalog.get("flash-attention-forward")
    v = _grade(ex.slug, (Path(__file__).parent / "wrong" / ex.module / variant).read_text())
    assert v.status == Status.MEMORY_LIMIT, (v.status, v.message)


@cuda_only
def test_on_cuda_an_answer_copied_to_the_cpu_is_a_wrong_answer():
    ex = catalog.get("flash-attention-forward")
    code = ex.reference_path.read_text() + textwrap.dedent("""
        _on_device = flash_attention_forward
        def flash_attention_forward(*args, **kwargs):
            out, lse = _on_device(*args, **kwargs)
            return out.cpu(), lse.cpu()
    """)
    v = _grade(ex.slug, code)
    assert v.status == Status.WRONG_ANSWER
    assert any("but this grading runs on cuda" in c.message for c in v.cases)


@cuda_only
def test_on_cuda_initialising_cuda_is_seen_as_a_fork_hazard():
    probe = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {PLATFORM!r})
        import torch
        from inferprep.runner import cuda
        assert cuda.fork_hazards() == [], cuda.fork_hazards()
        torch.zeros(1, device="cuda")
        print(cuda.fork_hazards())
    """)
    out = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "torch has initialised CUDA" in out.stdout and "/dev/nvidia" in out.stdout
