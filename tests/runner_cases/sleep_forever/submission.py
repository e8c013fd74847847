import time


def add(x, y):
    time.sleep(10_000)
