# Two commands for a fresh machine:  make run  (serve the platform)  ·  make test  (run the tests)
VENV ?= .venv
# A world-readable Python (Debian's) lets the sandbox's unprivileged uid read the stdlib even
# without bubblewrap; fall back to whatever python3 is on PATH.
PYTHON ?= $(shell /usr/bin/python3 -c 'import sys, venv; assert sys.version_info >= (3, 11)' 2>/dev/null && echo /usr/bin/python3 || echo python3)
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install check mutate bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build of torch first (a bare `pip install torch` pulls a multi-GB CUDA build).
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev,triton]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/inferprep serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadgroup

check: $(STAMP)
	$(VENV)/bin/inferprep check-exercise --all

# Mutation testing of every grader (issue 20): regenerates docs/grader-strength.md. JOBS gradings
# at once; about an hour on two free cores.
JOBS ?= 2
mutate: $(STAMP)
	$(VENV)/bin/inferprep mutate --all --jobs $(JOBS) --no-diffs --report docs/grader-strength.md

bench: $(STAMP)
	$(PY) bench/runner.py

clean:
	rm -rf $(VENV) .pytest_cache artifacts
