"""WRONG (cheat): the question's headline answer, always: "rope_scaling", with one served-stack experiment as
evidence. Killed by every KV-cache and weights specimen."""


def diagnose(model):
    L = max(model.lengths)
    model.niah(list(model.factors), L, model.depths[0])
    return {"cause": "rope_scaling", "evidence": [["niah", ["rope_scaling"], L, model.depths[0]]]}
