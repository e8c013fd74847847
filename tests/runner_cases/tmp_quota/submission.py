import os
import tempfile


def add(x, y):
    # fill the scratch space: RLIMIT_FSIZE caps one file at 8 MiB, so write many
    wrote, i = 0, 0
    block = b"x" * (1 << 20)
    d = tempfile.gettempdir()
    try:
        while wrote < (400 << 20):
            with open(os.path.join(d, f"fill-{i}"), "wb") as f:
                for _ in range(4):
                    f.write(block)
                    wrote += len(block)
            i += 1
    except OSError as e:
        print("stopped:", type(e).__name__, e.errno, "after", wrote >> 20, "MiB")
    if wrote > (200 << 20):
        print("QUOTA_BROKEN", wrote >> 20, "MiB")
    return x - y
