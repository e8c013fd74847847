"""``python -m inferprep``: the same command line as the ``inferprep`` script."""

from .cli import app

app(prog_name="inferprep")
