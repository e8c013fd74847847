def add(x, y):
    for _ in range(100):
        try:
            print("y" * (1 << 20))
        except OSError:
            pass
    return x + y
