import math

ROOT = math.sqrt(-1)


def add(x, y):
    return x + y
