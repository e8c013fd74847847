"""The perf stage end to end (runner.perf) on the add-vectors fixture, with the parent's clock replaced
by a fake one that advances by scripted amounts: no figure here depends on how fast anything ran.

``tests/perf_cases/<case>/`` holds the known exploits, each a correct solution (the hidden cases
pass) plus the exploit, and ``expected.toml``:

- ``perf_status``: the allowed ``verdict.perf.status`` values;
- ``message_contains``: text of ``verdict.perf.message``;
- ``parent_figures``: the figures are exactly what the parent's fake clock scripted (the submission's
  own timers and prints change nothing);
- ``device``: ``cuda`` for a case that only means something there (skipped without a GPU).

``tests/perf_cases_triton/`` holds the Triton ones (a kernel that writes its input), graded on
triton-softmax by their own tests below.
"""

import tomllib

import pytest
import torch

from runner_support import ROOT, sandbox_modes
from inferprep import catalog
from inferprep.grading import perf_stats
from inferprep.runner import judge
from inferprep.runner import perf as perf_stage
from inferprep.runner.process import drain_cleanups
from inferprep.verdict import Status

CASES_DIR = ROOT / "tests" / "perf_cases"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if p.is_dir())

STEPS = {"submission": 3e-3, "reference": 2e-3, "echo": 1e-3, "stage": 0.01}
"""Seconds the fake clock advances at each read, by what is being timed: every timed round trip of
the submission reads 3 ms, of the reference 2 ms, of the echo 1 ms."""

RULE = perf_stats.StoppingRule(min_n=5, max_n=50, cap_s=5.0)


class FakeClock:
    def __init__(self, steps: dict[str, float]):
        self.steps, self.now = steps, 0.0
        self.reads: dict[str, int] = {}

    def __call__(self, what: str) -> float:
        self.now += self.steps[what]
        self.reads[what] = self.reads.get(what, 0) + 1
        return self.now


def grade_with_perf(code: str, clock: FakeClock, device: str = "cpu"):
    ex = catalog.get("add-vectors")
    v = judge.grade(ex, code, device=device, sandbox_mode=sandbox_modes()[0], perf=True, perf_clock=clock,
                    perf_rule=RULE)
    drain_cleanups()
    return v


def _case_params():
    out = []
    for name in CASES:
        exp = tomllib.loads((CASES_DIR / name / "expected.toml").read_text())
        marks = []
        if exp.get("device") == "cuda" and not torch.cuda.is_available():
            marks = [pytest.mark.skip(reason="a CUDA-only exploit (side streams): no CUDA device here; "
                                      "scripts/gpu_check.sh runs it on a GPU machine")]
        out.append(pytest.param(name, exp, id=name, marks=marks))
    return out


class PauseCheckingClock(FakeClock):
    """A FakeClock that, at each read inside the reference's or the overhead's timed window, records
    the submission's threads that are not stopped, and at each read inside the submission's own
    window, how many of its threads run (the positive control: its spinners exist and are alive)."""

    def __init__(self, steps, sides: dict):
        super().__init__(steps)
        self.sides = sides
        self.running_beside_reference: list = []
        self.alive_at_own_turn: list[int] = []

    def __call__(self, what: str) -> float:
        from inferprep.runner import freeze

        sub = self.sides.get("submission")
        if sub is not None and what in ("reference", "echo", "submission"):
            uid = sub.proc.child.uid_used
            assert uid is not None, "the perf children run under a uid of their own here"
            running = freeze.running_tasks(uid)
            if what == "submission":
                self.alive_at_own_turn.append(len(running))
            else:
                self.running_beside_reference += running
        return super().__call__(what)


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("name, exp", _case_params())
def test_perf_case(name, exp, fixture_content, monkeypatch):
    clock = FakeClock(STEPS)
    if exp.get("paused_during_reference"):
        sides: dict = {}
        init = perf_stage.PerfSide.__init__

        def capture(self, proc, clock_, name_):
            init(self, proc, clock_, name_)
            sides[name_] = self

        monkeypatch.setattr(perf_stage.PerfSide, "__init__", capture)
        clock = PauseCheckingClock(STEPS, sides)
    if exp.get("graded_run_gone"):
        from inferprep.runner import sandbox
        from inferprep.runner.process import SubmissionProcess

        graded: list[int] = []
        close = SubmissionProcess.close

        def recording_close(self, *args, **kwargs):
            if not graded and self.child.uid_used is not None:   # the first to close: the graded run
                graded.extend(sandbox.uid_processes(self.child.uid_used))
            return close(self, *args, **kwargs)

        monkeypatch.setattr(SubmissionProcess, "close", recording_close)
        alive_at_stage: list[list[int]] = []
        run_stage = perf_stage.run_stage

        def checking_run_stage(*args, **kwargs):
            alive_at_stage.append([pid for pid in graded if _alive(pid)])
            return run_stage(*args, **kwargs)

        monkeypatch.setattr(perf_stage, "run_stage", checking_run_stage)
    v = grade_with_perf((CASES_DIR / name / "submission.py").read_text(), clock, exp.get("device", "cpu"))
    assert v.status == Status.PASSED, f"{name}: the hidden cases must pass first: {v.message} {v.cases}"
    assert v.perf is not None
    assert v.perf.status in exp["perf_status"], f"{name}: {v.perf}"
    if "message_contains" in exp:
        assert exp["message_contains"] in v.perf.message, v.perf.message
    if v.perf.status == "failed":
        assert v.perf.ratio is None and not v.perf.rankable
    if exp.get("graded_run_gone"):
        assert len(graded) >= 2, "the control: the graded run had its harness and its forked process"
        assert alive_at_stage == [[]], "the graded run's processes outlived it into the perf stage"
    if exp.get("paused_during_reference"):
        assert clock.running_beside_reference == [], "the submission ran while the reference was timed"
        # the control: at its own later turns the main thread, the spinning thread and the forked
        # process are all there and not stopped
        assert max(clock.alive_at_own_turn) >= 3, clock.alive_at_own_turn
    if exp.get("parent_figures"):
        # 3 ms a round trip, 2 ms for the reference, 1 ms of echo: (3 - 1) / (2 - 1)
        assert v.perf.median_s == pytest.approx(3e-3)
        assert v.perf.reference_median_s == pytest.approx(2e-3)
        assert v.perf.overhead_s == pytest.approx(1e-3)
        assert v.perf.ratio == pytest.approx(2.0)
        assert v.perf.n == RULE.min_n and v.perf.converged and v.perf.rankable
        assert v.perf.spread_s == pytest.approx(0.0, abs=1e-12)
        assert v.perf.device_kind == "cpu" and v.perf.roofline_ratio is None
        # two reads per timed round trip: warm-up and timed repetitions, each side once each
        assert clock.reads["submission"] == 2 * (perf_stage.WARMUP + RULE.min_n)


def test_perf_is_off_on_cpu_unless_asked(fixture_content):
    ex = catalog.get("add-vectors")
    v = judge.grade(ex, "def add(x, y):\n    return x + y\n", sandbox_mode=sandbox_modes()[0])
    drain_cleanups()
    assert v.status == Status.PASSED and v.perf is None


def test_perf_needs_the_core_to_pass(fixture_content):
    v = grade_with_perf("def add(x, y):\n    return x - y\n", FakeClock(STEPS))
    assert v.status == Status.WRONG_ANSWER and v.perf is None


def test_a_submission_that_raises_at_the_benchmark_size_fails_the_stage(fixture_content):
    code = "def add(x, y):\n    if x.numel() >= 1 << 16:\n        raise RuntimeError('too big')\n    return x + y\n"
    v = grade_with_perf(code, FakeClock(STEPS))
    assert v.status == Status.PASSED
    assert v.perf.status == "failed" and "raised at the benchmark size" in v.perf.message


def test_a_time_under_the_roofline_floor_is_flagged(fixture_content, monkeypatch):
    """A GPU the specs know: 65536 float32 adds move 786432 bytes, 0.16 us at the H200's 4.8 TB/s.
    A scripted net time of 0.1 us is under it: flagged, not ranked. (The device kind is what the
    parent reports; the child still runs on CPU.)"""
    monkeypatch.setattr(perf_stage, "device_kind", lambda device: "NVIDIA H200")
    clock = FakeClock({"submission": 1.1e-6, "reference": 5e-6, "echo": 1e-6, "stage": 0.01})
    v = grade_with_perf("def add(x, y):\n    return x + y\n", clock)
    floor = 3 * 4 * (1 << 16) / perf_stats.gpu_spec("NVIDIA H200").hbm_bytes_per_s
    assert v.perf.floor_s == pytest.approx(floor)
    assert v.perf.status == "flagged" and v.perf.flagged and not v.perf.rankable
    assert v.perf.roofline_ratio == pytest.approx(0.1e-6 / floor)
    assert "faster than the hardware allows" in v.perf.reason


class BesideClock(FakeClock):
    """The reference (and the echo) take ``slow`` times longer once the submission's child has made
    its first timed request: as if something it left on the GPU ran beside them."""

    def __init__(self, steps, slow: dict[str, float]):
        super().__init__(steps)
        self.slow, self.beside = slow, False

    def __call__(self, what: str) -> float:
        if what == "submission":
            self.beside = True
        if self.beside and what in self.slow:
            self.now += self.steps[what] * (self.slow[what] - 1)
        return super().__call__(what)


@pytest.mark.parametrize("slow, flagged", [({}, None), ({"reference": 1.5}, "the reference took 1.5x"),
                                           ({"echo": 1.5}, "the overhead took 1.5x")])
def test_a_reference_slower_beside_the_submission_than_alone_is_flagged_on_a_gpu(fixture_content, monkeypatch,
                                                                                  slow, flagged):
    """On a GPU the reference is first timed alone (no child of the submission exists); a reference
    or overhead median beside the submission over ALONE_TOLERANCE x its median alone is flagged (a
    kernel queued before the submission was paused still runs). The control ({}) is not flagged."""
    monkeypatch.setattr(perf_stage, "device_kind", lambda device: "NVIDIA H200")
    clock = BesideClock(STEPS, slow)
    v = grade_with_perf("def add(x, y):\n    return x + y\n", clock)
    assert v.perf.ratio is not None
    if flagged is None:
        assert v.perf.status == "measured" and not v.perf.flagged and v.perf.rankable, v.perf
        # the alone series: warm-up and min_n repetitions of the reference before the stage's own
        assert clock.reads["reference"] == 2 * (2 * (perf_stage.WARMUP + RULE.min_n))
    else:
        assert v.perf.status == "flagged" and not v.perf.rankable and flagged in v.perf.reason, v.perf


def test_too_short_to_time_has_no_ratio(fixture_content):
    v = grade_with_perf("def add(x, y):\n    return x + y\n",
                        FakeClock({"submission": 1e-3, "reference": 1e-3, "echo": 1e-3, "stage": 0.01}))
    assert v.perf.status == "measured" and v.perf.ratio is None and not v.perf.rankable
    assert "too short to time" in v.perf.message


PERF_EXERCISES = ["triton-softmax", "triton-flash-attention", "triton-paged-decode", "triton-moe-gemm", "rope",
                  "flash-attention-forward"]


def test_the_opted_in_exercises_are_these():
    assert sorted(ex.slug for ex in catalog.all_exercises() if ex.meta.perf) == sorted(PERF_EXERCISES)


@pytest.mark.parametrize("slug", PERF_EXERCISES)
def test_reference_passes_its_own_perf_stage(slug):
    """Each opted-in exercise's perf_case verifies the reference's outputs at the benchmark size (the
    reference stands in for the submission; two repetitions on the fake clock, no warm-up)."""
    ex = catalog.get(slug)
    if ex.unavailable:
        pytest.skip(f"{slug}: {ex.unavailable}")
    r = perf_stage.run_stage(ex, ex.reference_path.read_text(), device="cpu", salt=7, sandbox_mode=sandbox_modes()[0],
                             clock=FakeClock(STEPS), rule=perf_stats.StoppingRule(min_n=2, max_n=2), warmup=0)
    drain_cleanups()
    assert r.status == "measured", r.message
    assert r.n == 2 and r.ratio == pytest.approx(2.0)


def test_cancel_stops_the_stage(fixture_content):
    """The grading's cancel event, set as the first timed call goes out (the child then sleeps inside
    it), kills the children: the stage ends as cancelled, not as a failure of the submission."""
    import threading

    cancel = threading.Event()

    class CancellingClock(FakeClock):
        def __call__(self, what):
            if what == "submission":
                cancel.set()
            return super().__call__(what)

    code = "import time\n\ndef add(x, y):\n    if x.numel() >= 1 << 16:\n        time.sleep(10_000)\n    return x + y\n"
    r = perf_stage.run_stage(catalog.get("add-vectors"), code, device="cpu", salt=3, sandbox_mode=sandbox_modes()[0],
                             clock=CancellingClock(STEPS), rule=RULE, cancel=cancel)
    drain_cleanups()
    assert r.status == "error" and r.message == "the grading was cancelled"


class _Module:
    @staticmethod
    def add(x, y):
        return x + y


def test_harness_stage_timed_fetch_on_cpu():
    """The child's side: a staged masked call runs only in ``timed``, which answers with the
    digest of what ``fetch`` then returns; ``echo`` runs nothing (no-op flush and syncs on CPU)."""
    from inferprep.runner import harness, perf_wire

    x, y = torch.ones(3), torch.full((3,), 2.0)
    inner = {"op": "call", "fn": "add", "args": (x, y), "kwargs": {}}
    harness._stage({"inner": perf_wire.mask(inner, key=11)})
    digest = harness._timed(_Module, {"key": 11, "sketch": 5}, "cpu")
    out = harness._fetch()
    assert torch.equal(out, torch.full((3,), 3.0)) and digest == perf_wire.digest([out], 5)
    assert harness._fetch() is None                       # fetched once
    with pytest.raises(TypeError, match="nothing was staged"):
        harness._timed(_Module, {"key": 11, "sketch": 5}, "cpu")
    harness._stage({"inner": perf_wire.mask(inner, key=12)})
    d = harness._timed(_Module, {"key": 12, "sketch": 5, "echo": True, "like": [[[2, 5], torch.float16]]}, "cpu")
    assert type(d) is int and harness._fetch() is None    # an echo keeps nothing
    with pytest.raises(TypeError, match="call or a launch"):
        harness._stage({"inner": {"op": "exit"}})
    harness._l2_flush("cpu")
    assert harness._flush_buffer is None                  # nothing allocated on CPU


def test_mask_hides_and_unmask_restores():
    from inferprep.runner import perf_wire

    x = torch.randn(64, 33)
    ids = torch.arange(10, dtype=torch.int32)
    value = {"op": "launch", "args": [{"buffer": x, "offset": 0}, 7, {"buffer": ids}], "kwargs": (True,)}
    masked = perf_wire.mask(value, key=123)
    mx, mi = masked["args"][0]["buffer"], masked["args"][2]["buffer"]
    assert mx is not x and not torch.equal(mx, x) and not torch.equal(mi, ids)
    assert masked["args"][1] == 7 and masked["kwargs"] == (True,)
    wrong = perf_wire.mask(value, key=123)
    perf_wire.unmask(wrong, key=124)                      # another key gives noise
    assert not torch.equal(wrong["args"][0]["buffer"], x)
    perf_wire.unmask(masked, key=123)
    assert torch.equal(mx, x) and torch.equal(mi, ids)


def test_digest_depends_on_every_bit_and_on_the_sketch():
    from inferprep.runner import perf_wire

    t = torch.randn(1000)
    d = perf_wire.digest([t], 9)
    assert d == perf_wire.digest([t.clone()], 9)
    u = t.clone()
    u.view(torch.int32)[417] ^= 1                         # one bit of one element
    assert perf_wire.digest([u], 9) != d
    assert perf_wire.digest([t], 10) != d
    assert perf_wire.digest([t.view(10, 100)], 9) != d    # the shape is committed too
    assert perf_wire.digest([torch.zeros(3, dtype=torch.uint8)], 1) != perf_wire.digest([torch.zeros(3, dtype=torch.bool)], 1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the L2 flush and device sync are CUDA-only; no CUDA "
                    "device here (scripts/gpu_check.sh runs this on a GPU machine)")
def test_harness_flushes_l2_on_cuda():
    from inferprep.runner import harness

    harness._l2_flush("cuda")
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    assert harness._flush_buffer.numel() == 2 * l2 and int(harness._flush_buffer.max()) == 0
    from inferprep.runner import perf_wire

    x = torch.ones(1 << 20, device="cuda")
    harness._stage({"inner": perf_wire.mask({"op": "call", "fn": "add", "args": (x, x), "kwargs": {}}, 3)})
    digest = harness._timed(_Module, {"key": 3, "sketch": 4}, "cuda")
    out = harness._fetch()
    assert out.device.type == "cuda" and float(out[0]) == 2.0 and digest == perf_wire.digest([out], 4)


def test_a_kernel_that_writes_its_input_fails_the_stage():
    """triton-softmax: a kernel correct on the hidden cases that zeroes its input rows at the
    benchmark size. The launch's buffers come back whole and the parent checks them bit for bit."""
    ex = catalog.get("triton-softmax")
    if ex.unavailable:
        pytest.skip(f"triton-softmax: {ex.unavailable}")
    code = (ROOT / "tests" / "perf_cases_triton" / "zeroed_input_kernel" / "submission.py").read_text()
    v = judge.grade(ex, code, sandbox_mode=sandbox_modes()[0], perf=True, perf_clock=FakeClock(STEPS),
                    perf_rule=RULE)
    drain_cleanups()
    assert v.status == Status.PASSED, v.message
    assert v.perf.status == "failed" and "changed" in v.perf.message and "inputs are read-only" in v.perf.message


def test_the_security_notes_quote_the_stage_s_figures():
    """docs/security.md's figures about the stage: the beside-vs-alone tolerance, and that torch's CPU
    generator keeps only the low 32 bits of a seed (why the CPU key is 32 bits there)."""
    text = " ".join((ROOT / "docs" / "security.md").read_text().split())
    assert f"more than {perf_stage.ALONE_TOLERANCE:g}x its median alone" in text
    from inferprep.runner import perf_wire

    assert torch.equal(perf_wire.keystream(5, 0, 64, "cpu"), perf_wire.keystream(5 + 2**32, 0, 64, "cpu"))
    assert not torch.equal(perf_wire.keystream(5, 0, 64, "cpu"), perf_wire.keystream(6, 0, 64, "cpu"))
    assert "seeds 5 and 5 + 2**32 give the same stream" in text
