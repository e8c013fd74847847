"""WRONG: cheat: returns the public vLLM log's figures whatever the inputs. Killed by vllm-log-with-graph-estimate."""


def kv_capacity(total_bytes, gpu_memory_utilization, weight_bytes_per_gpu, activation_peak_bytes,
                non_torch_bytes, cudagraph_bytes, model, tp, kv_dtype, block_size, context_len,
                max_num_seqs):
    return {"requested_bytes": 68_023_692_035, "available_kv_bytes": 66_402_341_880,
            "kv_heads_per_gpu": 8, "kv_bytes_per_token_per_gpu": 114_688.0,
            "page_bytes": 1_835_008.0, "num_blocks": 36_186, "blocks_per_seq": 512,
            "max_seqs": 70, "max_seqs_effective": 70, "vllm_max_concurrency": 70.67578125,
            "binding": "kv_pool"}


def ceiling_reasons():
    return ["growth-preemption", "max-num-seqs", "rank-minimum", "reserved-before-kv", "whole-blocks"]
