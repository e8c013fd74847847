import sys

sys.exit(0)


def add(x, y):
    return x + y
