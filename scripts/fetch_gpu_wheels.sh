#!/usr/bin/env bash
# Fill scripts/gpu_wheels/ with the wheels scripts/gpu_check.sh unpacks on a GPU machine that has
# no package registry: what inferprep's grading path imports besides torch and triton (pydantic
# and its pydantic_core, annotated_types, typing_extensions, typing_inspection; numpy, in case the
# machine's torch came without it; pyseccomp, the seccomp filter's binding). Built for CPython
# 3.12 on x86-64 Linux (the machine's Python); the versions are this checkout's venv's where it has
# them. Run here, where the registry is reachable. About 20 MB; not committed (.gitignore).
# Usage: scripts/fetch_gpu_wheels.sh [PYTHON]   (PYTHON runs pip; default: python3)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${1:-python3}"
dest="$here/gpu_wheels"
ver() { "$py" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || true; }
pin() { local v; v="$(ver "$1")"; if [ -n "$v" ]; then echo "$1==$v"; else echo "$1"; fi; }
mkdir -p "$dest"
"$py" -m pip download --dest "$dest" --only-binary=:all: --python-version 3.12 --implementation cp \
  --abi cp312 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  "$(pin pydantic)" "$(pin numpy)" "$(pin pyseccomp)"
ls -la "$dest"
du -sh "$dest"
