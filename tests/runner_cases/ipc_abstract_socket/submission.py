{UNHOOK}
import ctypes
import socket

IPC_CREAT, IPC_PRIVATE = 0o1000, 0


def add(x, y):
    # a 64 MiB SysV segment (outside RLIMIT_AS) and an abstract Unix socket: neither may outlive
    # this verdict or be reachable by another submission
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        shmid = libc.shmget(0x1F2E3D, 64 << 20, IPC_CREAT | 0o666)
        if shmid >= 0:
            print("SHM_CREATED", shmid)
            addr = libc.shmat(shmid, None, 0)
            if addr not in (None, ctypes.c_void_p(-1).value):
                ctypes.memset(addr, 0x41, 64 << 20)
        else:
            print("shmget refused, errno", ctypes.get_errno())
    except OSError as e:
        print("no ctypes:", type(e).__name__)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind("\0inferprep-runner-case")
        s.listen(1)
        print("ABSTRACT_BOUND")
    except OSError as e:
        print("abstract socket refused:", type(e).__name__)
    return x - y
