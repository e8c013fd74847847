import os


def add(x, y):
    os._exit(71)
