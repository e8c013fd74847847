def add(x, y):
    raise ValueError("my bug")
