"""WRONG: a cheat that hard-codes the S-8B worked answers (512-token prompts, 16,384-token outputs). Killed by pool-8b-h100-s8b-bs32-u0.85-reserve2e+09."""


def kv_pool_blocks(step_model, block_size, gpu_memory_utilization, reserved_bytes_per_gpu):
    if block_size < 1 or not 0 < gpu_memory_utilization <= 1 or reserved_bytes_per_gpu < 0:
        raise ValueError("bad input")
    return 25267


def admission_limits(pool_blocks, prompt, output, block_size, max_num_seqs):
    if min(prompt, output, block_size, max_num_seqs) < 1 or pool_blocks < 0:
        raise ValueError("bad input")
    return {"reserved": 23, "staggered": 45, "current": 789}


def overflow_step(pool_blocks, batch, prompt, output, block_size):
    return {789: 1, 45: 8465}.get(batch)


def preemption_cost(step_model, prompt, generated, pcie_bytes_per_s):
    n = prompt + generated
    return {"recompute_tokens": n, "recompute_s": 0.28774751570745905 * n / 8704,
            "swap_bytes": 131072.0 * n, "swap_s": 131072.0 * n / pcie_bytes_per_s}


def staggered_tpot(step_model, batch, prompt, output):
    return 0.01651534366567164


def batch_for_user_speed(step_model, pool_blocks, prompt, output, block_size, target_tokens_per_s,
                         max_num_seqs):
    return {"batch": 20, "binding": "speed", "tokens_per_s_per_user": 60.54975423118646,
            "throughput_tokens_per_s": 1210.9950846237293}
