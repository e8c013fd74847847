def add(x, y):
    raise ValueError("bad input \ud800 \udfff")
