"""Mutation testing of graders: how many small mistakes in a reference does its grader reject?

``generate`` makes mutants of a reference's text (``operators``), ``mutate_exercise`` grades and
classifies them (``engine``), ``equivalent`` reads the mutants listed as equivalent, and
``report`` renders the results (``inferprep mutate``, ``docs/grader-strength.md``).
"""

from .engine import (DETECTED, MUTATE_SALT, SCORE_GOAL, ExerciseRun, Outcome, Result, classify,
                     mutate_exercise)
from .equivalent import EquivalentFileError
from .mutants import Mutant, generate
from .operators import OPERATORS

__all__ = ["DETECTED", "MUTATE_SALT", "OPERATORS", "SCORE_GOAL", "EquivalentFileError", "ExerciseRun", "Mutant",
           "Outcome", "Result", "classify", "generate", "mutate_exercise"]
