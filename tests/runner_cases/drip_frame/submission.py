import json
import struct
import sys
import time


def _client():
    f = sys._getframe()
    while f:
        for v in f.f_locals.values():
            if type(v).__name__ == "Client" and hasattr(v, "chan"):
                return v
        f = f.f_back


def add(x, y):
    c = _client()
    head = json.dumps({"$dict": [["op", "result"], ["value", None]]}).encode() + b" " * 30
    sock = c.chan.sock
    sock.sendall(struct.pack("<II", len(head), 0))
    for b in head:  # one byte every 0.5 s: each read is quick, the frame takes 25 s
        sock.sendall(bytes([b]))
        time.sleep(0.5)
    time.sleep(1000)
