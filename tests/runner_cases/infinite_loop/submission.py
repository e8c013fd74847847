def add(x, y):
    while True:
        pass
