"""Hidden cases for ridge-point: the four tabled GPUs in every dtype they support, seeded made-up
GPUs, a GPU whose numbers are powers of two so the ridge lands exactly on an integer batch (the
boundary counts as compute-bound), intensities on both sides of and at the ridge; then the
input checks (each ValueError of the statement)."""

from __future__ import annotations

import dataclasses
import math

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, fail
from inferprep.specs import DType

RTOL = 1e-9
TABLED = [specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB]
# Powers of two: every formula order gives ridge = 256.0 exactly.
BINARY = dataclasses.replace(specs.H100_SXM, name="binary", bf16_dense_flops=float(2**50),
                             fp8_dense_flops=float(2**51), hbm_bytes_per_s=float(2**42))


def _made_up(seed: int):
    g = torch.Generator().manual_seed(500 + seed)
    u = torch.rand(3, generator=g, dtype=torch.float64).tolist()
    bf16 = 10 ** (13 + 3 * u[0])                   # 10 TFLOP/s .. 10 PFLOP/s
    bw = 10 ** (11 + 2.5 * u[1])                   # 100 GB/s .. 30 TB/s
    fp8 = None if u[2] < 0.25 else bf16 * (1 + 3 * u[2])
    return dataclasses.replace(specs.H100_SXM, name=f"made-up-{seed}", bf16_dense_flops=bf16,
                               fp8_dense_flops=fp8, hbm_bytes_per_s=bw)


def _gpus():
    return TABLED + [BINARY] + [_made_up(s) for s in range(6)]


def _dtypes(gpu):
    return [DType.BF16, DType.FP16] + ([DType.FP8] if gpu.fp8_dense_flops is not None else [])


def _exact(actual, expected: int, name: str) -> None:
    if isinstance(actual, bool) or not isinstance(actual, int):
        fail(f"{name}: expected an int, got {type(actual).__name__}")
    if actual != expected:
        fail(f"{name}: got {actual}, which is {'too large' if actual > expected else 'too small'}")


def _check_roofline(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != {"ridge", "attainable_flops", "bound"}:
        fail("roofline must return a dict with exactly the keys 'ridge', 'attainable_flops', 'bound'")
    expect_close(out["ridge"], exp["ridge"], name="['ridge']", rtol=RTOL)
    expect_close(out["attainable_flops"], exp["attainable_flops"], name="['attainable_flops']",
                 rtol=RTOL)
    if out["bound"] != exp["bound"]:
        fail(f"['bound']: got {out['bound']!r}, which is not the roof that binds at this intensity")


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def grade(g: Grading) -> None:
    ref = g.reference()
    for gpu in _gpus():
        for dt in _dtypes(gpu):
            with g.case(f"ridge-{_slug(gpu.name)}-{dt.value}"):
                expect_close(g.call("ridge_point", gpu, dt), ref.ridge_point(gpu, dt), rtol=RTOL)
    for gpu in _gpus():
        dt = _dtypes(gpu)[-1]
        ridge = ref.ridge_point(gpu, dt)
        for label, x in (("zero", 0.0), ("low", ridge / 7.3), ("at-ridge", ridge),
                         ("high", ridge * 3.1), ("int", 64)):
            with g.case(f"roofline-{_slug(gpu.name)}-{dt.value}-{label}"):
                _check_roofline(g.call("roofline", gpu, dt, x), ref.roofline(gpu, dt, x))
    for b in (1, 7, 64, 296, 1000):
        for wd in (DType.BF16, DType.FP8, DType.INT4, DType.FP32):
            with g.case(f"intensity-b{b}-{wd.value}"):
                expect_close(g.call("decode_gemm_intensity", b, wd), ref.decode_gemm_intensity(b, wd),
                             rtol=RTOL)
    combos = [(DType.BF16, DType.BF16), (DType.FP16, DType.FP16), (DType.FP8, DType.BF16),
              (DType.INT8, DType.BF16), (DType.INT4, DType.BF16), (DType.FP8, DType.FP8),
              (DType.INT4, DType.FP8), (DType.FP32, DType.BF16)]
    for gpu in _gpus():
        for wd, cd in combos:
            if cd is DType.FP8 and gpu.fp8_dense_flops is None:
                continue
            exp = ref.compute_bound_batch(gpu, wd, cd)
            x = ref.ridge_point(gpu, cd) * wd.bytes_per_element / 2
            if gpu is not BINARY and abs(x - round(x)) < 1e-6 * x:
                continue  # never grade a float-rounding coin flip
            with g.case(f"batch-{_slug(gpu.name)}-{wd.value}-on-{cd.value}"):
                _exact(g.call("compute_bound_batch", gpu, wd, cd), exp, "compute_bound_batch")
    with g.case("tiny-ridge-batch-is-at-least-1"):
        fast_mem = dataclasses.replace(BINARY, name="fast-memory", hbm_bytes_per_s=float(2**52))
        _exact(g.call("compute_bound_batch", fast_mem, DType.INT4, DType.BF16),
               ref.compute_bound_batch(fast_mem, DType.INT4, DType.BF16), "compute_bound_batch")
    # Input checks last.
    h100, a100, bf = specs.H100_SXM, specs.A100_SXM_80GB, DType.BF16
    checks = [(f"intensity-batch-{name}", "decode_gemm_intensity", (bad, bf))
              for name, bad in (("zero", 0), ("negative", -3), ("float", 2.0), ("bool", True))]
    checks += [(f"roofline-intensity-{name}", "roofline", (h100, bf, bad))
               for name, bad in (("negative", -1.0), ("nan", math.nan), ("infinite", math.inf))]
    checks += [("ridge-fp8-on-a100", "ridge_point", (a100, DType.FP8)),
               ("ridge-int8", "ridge_point", (h100, DType.INT8)),
               ("ridge-fp32", "ridge_point", (h100, DType.FP32)),
               ("roofline-fp8-on-a100", "roofline", (a100, DType.FP8, 10.0)),
               ("roofline-int4", "roofline", (h100, DType.INT4, 10.0)),
               ("batch-fp8-on-a100", "compute_bound_batch", (a100, DType.FP8, DType.FP8)),
               ("batch-int4-math", "compute_bound_batch", (h100, DType.INT4, DType.INT4)),
               ("batch-int8-math", "compute_bound_batch", (h100, DType.INT8, DType.INT8))]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
