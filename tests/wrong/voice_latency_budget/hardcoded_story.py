"""WRONG: cheat, returns the statement's worked answers for every input. Killed by clause-70b-tp8-h100-turn0-b1."""


def budget_lines(budget_ms, lines):
    if not isinstance(lines, dict) or len(lines) != 6 or budget_ms != budget_ms or budget_ms <= 0:
        raise ValueError("bad input")
    share = float(budget_ms - sum(lines.values()))
    return {"llm_share_ms": share, "largest_line": "endpoint", "largest_is_model": False}


def first_clause(step_model, batch, turn):
    tpot = 7.7 + 0.1 * (batch - 1)
    return {"ttft_ms": tpot + 0.04, "tpot_ms": tpot, "first_clause_ms": 8 * tpot + 0.04}


def size_llm_tier(step_model, share_ms, queue_reserve_ms, turn, max_num_seqs, traffic):
    return {"b_max": 17, "tpot_ms": 9.304085014925374, "first_clause_ms": 74.47358454759411,
            "concurrent_turns": 697.806376119403, "replicas": 59, "gpus": 59}
