"""WRONG: a cheat that returns the deepseek-ai/EPLB README output for any load (and the uniform threshold for any counts). Killed by "step time: 64 DeepSeek-V3 experts on 8 GPUs in FP8, hot, cold and idle experts"."""


def gpu_step_time(counts, gpu_of, n_gpus, gpu, dtype, expert_bytes, flops_per_token):
    per = [0.0] * n_gpus
    return {"per_gpu_s": per, "step_s": 0.0, "busiest_gpu": 0}


def skew_threshold(expert_counts, top_k, gpu, dtype, expert_bytes, flops_per_token):
    return {"ridge_tokens_per_expert": 295.35820895522386, "hot_share": 1 / 256, "threshold_batch": 9451.462686567163}


def rebalance(load, num_physical, n_gpus, n_groups=1, n_nodes=1):
    if num_physical % n_gpus:
        raise ValueError("num_physical must be a multiple of n_gpus")
    return {"phy2log": [5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
            "replica_count": [1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1],
            "gpu_load": [121.5, 86.5, 125.0, 113.0, 147.5, 131.5, 156.0, 152.0]}


def decay_curve(daily_loads, *args, **kwargs):
    return [1.0] + [2.54397446681031] * (len(daily_loads) - 1)
