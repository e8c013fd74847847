"""Unit tests of inferprep.sim.chrome_trace.decode_trace (traces for mbu-gap-diagnosis and
batch1-gap): determinism, well-formed events, one non-overlapping stream, nested host events."""

import dataclasses
import json

import pytest

from inferprep import specs
from inferprep.sim.chrome_trace import decode_trace
from inferprep.specs import DType, ModelConfig

TOY = ModelConfig(name="toy", n_layers=3, hidden_size=512, n_heads=8, n_kv_heads=2, head_dim=64,
                  ffn_size=1024, vocab_size=5000)
MLA = ModelConfig(name="mla", n_layers=2, hidden_size=1024, n_heads=8, n_kv_heads=8, head_dim=192,
                  ffn_size=2048, vocab_size=5000, q_lora_rank=256, kv_lora_rank=128,
                  qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=64)
VARIANTS = [
    dict(mode="graph"),
    dict(mode="eager"),
    dict(mode="eager", d2h_logits=True, cpu_sampling_us=200.0),
    dict(mode="eager", item_sync_layers=(0, 2), python_gap_us=2.0, greedy=True),
    dict(mode="graph", truncate_last=False, shuffle=False, extra_events=False),
    dict(mode="eager", weight_dtype=DType.FP8, jitter=0.0),
]


def X(trace, cat=None):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and (cat is None or e["cat"] == cat)]


@pytest.mark.parametrize("kw", VARIANTS)
@pytest.mark.parametrize("model", [TOY, MLA])
def test_deterministic_per_seed(model, kw):
    a = decode_trace(model, specs.H100_SXM, [100, 7], seed=3, **kw)
    b = decode_trace(model, specs.H100_SXM, [100, 7], seed=3, **kw)
    c = decode_trace(model, specs.H100_SXM, [100, 7], seed=4, **kw)
    assert json.dumps(a) == json.dumps(b)
    assert json.dumps(a) != json.dumps(c)


@pytest.mark.parametrize("kw", VARIANTS)
@pytest.mark.parametrize("model", [TOY, MLA])
def test_well_formed(model, kw):
    t = decode_trace(model, specs.B200, [4096], seed=1, n_steps=3, **kw)
    json.dumps(t)                                            # plain JSON
    for e in t["traceEvents"]:
        assert e["ph"] in ("X", "M", "s")
        if e["ph"] == "X":
            assert set(e) == {"ph", "cat", "name", "ts", "dur", "pid", "tid", "args"}
            assert isinstance(e["ts"], float) and isinstance(e["dur"], float) and e["dur"] > 0
            assert e["cat"] in ("kernel", "cpu_op", "cuda_runtime", "gpu_memcpy")
            if e["cat"] == "kernel":
                assert isinstance(e["args"]["step"], int) and (e["pid"], e["tid"]) == (0, 7)
    ks = X(t, "kernel")
    assert sorted({k["args"]["step"] for k in ks}) == [0, 1, 2]


@pytest.mark.parametrize("kw", VARIANTS)
def test_kernels_do_not_overlap_and_steps_are_in_order(kw):
    t = decode_trace(TOY, specs.A100_SXM_80GB, [300] * 4, seed=2, n_steps=4, **kw)
    ks = sorted(X(t, "kernel"), key=lambda e: e["ts"])
    ns = lambda x: round(x * 1000)                            # noqa: E731  (whole nanoseconds)
    for a, b in zip(ks, ks[1:]):
        assert ns(a["ts"]) + ns(a["dur"]) <= ns(b["ts"])
        assert a["args"]["step"] <= b["args"]["step"]


@pytest.mark.parametrize("kw", VARIANTS)
def test_cpu_events_nest(kw):
    t = decode_trace(TOY, specs.H200_SXM, [64], seed=5, n_steps=3, **kw)
    cpu = sorted(X(t, "cpu_op") + X(t, "cuda_runtime"), key=lambda e: (round(e["ts"] * 1000), -e["dur"]))
    assert len({(e["pid"], e["tid"]) for e in cpu}) == 1
    stack = []                                               # (end in ns)
    for e in cpu:
        s, f = round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)
        while stack and stack[-1] <= s:
            stack.pop()
        assert not stack or f <= stack[-1], f"{e['name']} crosses its parent"
        stack.append(f)
    steps = [e for e in cpu if e["name"].startswith("ProfilerStep#")]
    assert len(steps) == 3


def test_modes_and_variants_show_in_the_events():
    g = decode_trace(TOY, specs.H100_SXM, [64], seed=0, n_steps=2, mode="graph", truncate_last=False)
    e = decode_trace(TOY, specs.H100_SXM, [64], seed=0, n_steps=2, mode="eager", truncate_last=False)
    names = lambda t, cat: [x["name"] for x in X(t, cat)]   # noqa: E731
    assert names(g, "cuda_runtime").count("cudaGraphLaunch") == 2
    assert "cudaGraphLaunch" not in names(e, "cuda_runtime")
    assert names(e, "cuda_runtime").count("cudaLaunchKernel") == len(X(e, "kernel"))
    d = decode_trace(TOY, specs.H100_SXM, [64], seed=0, n_steps=2, mode="eager", d2h_logits=True,
                     cpu_sampling_us=300.0, truncate_last=False)
    assert not any("Sampling" in n or "SoftMax" in n for n in names(d, "kernel"))
    assert "aten::topk" in names(d, "cpu_op")
    i = decode_trace(TOY, specs.H100_SXM, [64], seed=0, n_steps=2, mode="eager", item_sync_layers=(1,),
                     truncate_last=False)
    assert names(i, "cpu_op").count("aten::item") == 2
    assert names(i, "cuda_runtime").count("cudaStreamSynchronize") == 4


def test_truncated_last_step_and_order():
    full = decode_trace(TOY, specs.H100_SXM, [64], seed=9, n_steps=3, truncate_last=False)
    cut = decode_trace(TOY, specs.H100_SXM, [64], seed=9, n_steps=3, truncate_last=True)
    per = lambda t, s: sum(1 for k in X(t, "kernel") if k["args"]["step"] == s)   # noqa: E731
    assert per(cut, 0) == per(full, 0) == per(full, 2) and 1 <= per(cut, 2) < per(full, 2)
    ordered = decode_trace(TOY, specs.H100_SXM, [64], seed=9, shuffle=False, extra_events=False)
    ts = [e["ts"] for e in X(ordered, "kernel")]
    assert ts == sorted(ts)


def test_durations_follow_bandwidth():
    """A GEMM never beats peak bandwidth; a slower GPU makes every GEMM slower."""
    fast = dataclasses.replace(specs.H100_SXM, hbm_bytes_per_s=8e12)
    a = decode_trace(specs.LLAMA_3_1_8B, specs.H100_SXM, [1], seed=1, n_steps=2, jitter=0.0)
    b = decode_trace(specs.LLAMA_3_1_8B, fast, [1], seed=1, n_steps=2, jitter=0.0)
    lm = lambda t: max(k["dur"] for k in X(t, "kernel"))   # noqa: E731 (the LM head GEMM)
    head_bytes = 128256 * 4096 * 2
    assert lm(a) >= head_bytes / 3.35e12 * 1e6 and lm(b) < lm(a)
    with pytest.raises(ValueError):
        decode_trace(specs.MIXTRAL_8X7B, specs.H100_SXM, [1])
    with pytest.raises(ValueError):
        decode_trace(TOY, specs.H100_SXM, [1], mode="lazy")
