"""chunked-prefill-damage: a step-level simulation of a vLLM-V1-like engine with chunked prefill.

Rules, outputs and errors: see the statement.
"""

from __future__ import annotations

from inferprep.sim.step_model import StepModel


def simulate_engine(step_model: StepModel, warm: list, trace: list, max_num_batched_tokens: int,
                    max_num_seqs: int) -> dict:
    """Run the engine until every request has finished.

    ``warm``: ``[context, remaining_output]`` per request already decoding at t = 0 (admitted in
    list order, before anything else). ``trace``: ``[arrival_s, prompt_tokens, output_tokens]``
    per arriving request. Request ids: the warm requests are 0 .. W-1, the trace's W .. W+N-1,
    in the given orders.

    Returns ``{"steps": [{"start_s", "duration_s", "rows": [[request_id, tokens], ...]}, ...],
    "requests": [{"admitted_s", "first_token_s", "ttft_s", "finish_s", "tokens", "max_gap_s",
    "mean_gap_s"}, ...]}``.

    Raises:
        ValueError: a step_model that is not a StepModel, a budget or seat count not an int >= 1,
            a budget below the seat count, more warm requests than seats, a malformed warm or
            trace entry (see the statement).
    """
    raise NotImplementedError
