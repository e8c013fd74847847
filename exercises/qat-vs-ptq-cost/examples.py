"""Public cases for qat-vs-ptq-cost (literal expected values)."""

import math

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import B200, H100_SXM, LLAMA_3_1_70B, DType

THR = {"bf16": 600.0, "fp8": 1000.0, "int4_weight_only": 1400.0}


def _case(**kw):
    c = {"training_access": True, "format": "int4_weight_only", "gpu": H100_SXM,
         "fp4_dense_flops": None, "ptq_drop": 3.0, "max_drop": 1.0, "compute_bound_share": 0.2,
         "fleet_gpus": 64, "thr_ptq": 1000.0, "thr_qat": 1400.0, "qat_gpu_hours": 3902.5736378950205,
         "days_to_refresh": 90.0}
    c.update(kw)
    return c


def grade(g: Grading) -> None:
    with g.case("llama-3.1-70b-qat-1e10-tokens-h100"):
        r = g.call("qat_gpu_hours", LLAMA_3_1_70B, 1e10, H100_SXM, DType.BF16, 0.4, True)
        expect_equal(r["active_params"], 69_501_714_432, name="active_params")
        expect_close(r["flops_per_token"], 556_013_715_456, name="flops_per_token", rtol=1e-9)
        expect_close(r["total_flops"], 5.56013715456e21, name="total_flops", rtol=1e-9)
        expect_close(r["gpu_hours"], 3902.5736378950205, name="gpu_hours", rtol=1e-9)
    with g.case("fleet-64-fp8-to-int4"):
        r = g.call("fleet_saving", 64, "fp8", "int4_weight_only", THR)
        expect_close(r["speedup"], 1.4, name="speedup", rtol=1e-9)
        expect_close(r["gpus_needed"], 45.714285714285715, name="gpus_needed", rtol=1e-9)
        expect_close(r["gpus_saved"], 18.285714285714285, name="gpus_saved", rtol=1e-9)
        expect_close(g.call("break_even_days", 3902.5736378950205, 18.285714285714285),
                     8.892583159265998, name="break_even_days", rtol=1e-9)
    with g.case("same-format-is-never-faster"):
        r = g.call("fleet_saving", 64, "fp8", "fp8", THR)
        expect_equal(r["speedup"], 1.0, name="speedup")
        expect_close(r["gpus_saved"], 0.0, name="gpus_saved", rtol=1e-9, atol=64e-9)
        expect_close(g.call("break_even_days", 3902.5736378950205, 0.0), math.inf, name="break_even_days")
    with g.case("skip-rules"):
        expect_equal(g.call("skip_qat", _case()), [], name="go ahead")
        expect_equal(g.call("skip_qat", _case(format="fp4", thr_qat=2000.0)), ["no_kernel_for_format"],
                     name="fp4 on H100")
        expect_equal(g.call("skip_qat", _case(format="fp4", gpu=B200, fp4_dense_flops=9e15, thr_qat=2000.0)),
                     [], name="fp4 on B200")
        expect_equal(g.call("skip_qat", _case(fleet_gpus=2, ptq_drop=0.5)),
                     ["fleet_too_small", "ptq_meets_bar", "refresh_before_break_even"], name="small fleet")
    with g.case("rejects-missing-format", group=INPUT_CHECKS):
        g.raises("ValueError", "fleet_saving", 64, "fp8", "int4_awq", THR)
