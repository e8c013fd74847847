import os
import tempfile

# Without bubblewrap the child gets a private /tmp, but every other world-writable folder of the
# host is still the host's: /dev/shm (a channel to a concurrent submission, and half the RAM),
# /var/tmp (the host's disk), /run/lock (not even swept after the verdict: a file planted there
# outlives it and reaches the next submission).
CANDIDATES = ["/dev/shm", "/var/tmp", "/run/lock", "/var/lock", "/var/crash", "/var/mail", "/dev/mqueue"]


def add(x, y):
    own = {os.path.realpath(tempfile.gettempdir()), os.path.realpath(os.getcwd())}
    for d in CANDIDATES:
        if os.path.realpath(d) in own or not os.path.isdir(d):
            continue
        try:
            fd, path = tempfile.mkstemp(prefix="planted-", dir=d)
            os.write(fd, b"from a submission")
            os.close(fd)
            print("PLANTED_SHARED", d)
        except OSError as e:
            print("cannot write", d, type(e).__name__)
    return x - y
