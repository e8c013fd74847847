def grade(g):
    pass
