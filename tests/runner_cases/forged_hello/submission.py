import sys


def _client():
    f = sys._getframe()
    while f:
        for v in f.f_locals.values():
            if type(v).__name__ == "Client" and hasattr(v, "chan"):
                return v
        f = f.f_back


def add(x, y):
    # a set-up failure forged after the hello: must read as the submission's, never internal error
    _client().send({"op": "hello", "error": "cannot load the seccomp filter: forged"})
    return x + y
