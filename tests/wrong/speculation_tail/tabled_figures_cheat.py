"""WRONG: a cheat that returns the S-spec figures from a table and never models anything. Killed by break-even-b4-c512-g1."""
TABLE = {(4, 4): 0.1372512052394272, (128, 4): 0.6029016163781595, (1024, 4): 0.8925738014199929,
         (1024, 1): 0.7587690940077667}


def break_even_alpha(target, drafter, batch_size, context_len, g):
    if not isinstance(g, int) or not 0 <= g <= 8 or batch_size < 1 or context_len < 0:
        raise ValueError("bad input")
    return TABLE.get((batch_size, g), 0.5)


def tail_report(target, drafter, trace, draft_lengths):
    raise ValueError("not modelled")


def draft_lengths(target, drafter, context_len, alpha_est):
    if not alpha_est:
        raise ValueError("empty")
    return [4 if len(alpha_est) <= 8 else 0] * len(alpha_est)
