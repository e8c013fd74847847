from inferprep.grading import Grading

def grade(g: Grading) -> None:
    pass
