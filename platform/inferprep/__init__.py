"""inferprep: graded practice for LLM inference-engineering interviews."""

__version__ = "0.1.0"
