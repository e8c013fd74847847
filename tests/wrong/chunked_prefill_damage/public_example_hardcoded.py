"""WRONG (cheat): returns the public example's answer whatever the inputs. Killed by story-100k-prompt-among-32-decoders."""

from __future__ import annotations

import math


def simulate_engine(step_model, warm, trace, max_num_batched_tokens, max_num_seqs):
    if max_num_batched_tokens < max_num_seqs or not isinstance(trace, list):
        raise ValueError("bad inputs")
    for a, p, o in trace:
        if not isinstance(a, (int, float)) or isinstance(a, bool) or not math.isfinite(a) or a < 0:
            raise ValueError("bad arrival")
    steps = [
        {"start_s": 0.0, "duration_s": 0.3850587087393065, "rows": [[0, 1], [1, 1], [2, 8190]]},
        {"start_s": 0.3850587087393065, "duration_s": 0.4405961772688721, "rows": [[0, 1], [1, 1], [2, 8190]]},
        {"start_s": 0.8256548860081786, "duration_s": 0.23583601724460052, "rows": [[0, 1], [2, 3620], [3, 500]]},
        {"start_s": 1.061490903252779, "duration_s": 0.009796712883582089, "rows": [[2, 1], [3, 1]]},
    ]
    keys = ("admitted_s", "first_token_s", "ttft_s", "finish_s", "tokens", "max_gap_s", "mean_gap_s")
    reqs = [
        (None, None, None, 1.061490903252779, 3, 0.4405961772688721, 0.3382160972567363),
        (None, None, None, 0.8256548860081786, 2, 0.4405961772688721, 0.4405961772688721),
        (0.0, 1.061490903252779, 1.061490903252779, 1.0712876161363611, 2, 0.009796712883582082, 0.009796712883582082),
        (0.8256548860081786, 1.061490903252779, 1.0564909032527792, 1.0712876161363611, 2, 0.009796712883582082,
         0.009796712883582082),
    ]
    return {"steps": steps, "requests": [dict(zip(keys, r)) for r in reqs]}
