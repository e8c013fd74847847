"""WRONG: cheat that returns the public examples' numbers whatever the inputs. Killed by hours-llama-3.1-8b-h100-sxm-bf16-mfu0.4-teacher-ovh0.0-tokens1e+10."""

import math


def qat_gpu_hours(model, tokens, gpu, compute_dtype, mfu, distill_teacher, fakequant_overhead=0.0):
    return {"active_params": 69_501_714_432, "flops_per_token": 556_013_715_456.0,
            "total_flops": 5.56013715456e21, "gpu_hours": 3902.5736378950205}


def fleet_saving(fleet_gpus, ptq_format, qat_format, tokens_per_s_per_gpu):
    s = tokens_per_s_per_gpu[qat_format] / tokens_per_s_per_gpu[ptq_format]
    return {"speedup": s, "gpus_needed": fleet_gpus / s, "gpus_saved": fleet_gpus - fleet_gpus / s}


def break_even_days(qat_gpu_hours, gpus_saved):
    return math.inf if gpus_saved <= 0 else qat_gpu_hours / (24 * gpus_saved)


def skip_qat(case):
    return []
