"""WRONG: cheat: returns the story's c = 2048 table and headline numbers for any input. Killed by step-story-b1-c2048-g0."""

STORY = [[1, 25, 8], [26, 28, 7], [29, 34, 6], [35, 41, 5], [42, 53, 4], [54, 90, 3], [91, 600, 2]]


def spec_step_time(target, drafter, batch, context_len, g):
    return 0.011027622017910447


def spec_speedup(target, drafter, batch, context_len, g, alpha):
    return 2.9004045344857254 if batch == 1 else 0.7391751450875399


def best_draft_length(target, drafter, batch, context_len, alpha, g_max):
    return next(k for s, e, k in STORY if s <= batch <= e) if batch <= 600 else 2


def draft_table(target, drafter, context_len, alpha, g_max, max_num_seqs, kv_capacity_tokens):
    return [list(r) for r in STORY]
