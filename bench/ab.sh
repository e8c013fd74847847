#!/bin/sh
# Another checkout's platform (OTHER, e.g. main exported with `git archive main | tar -x -C DIR`)
# then this one, back to back, through the same benchmarks (this checkout's bench/): CPU per
# request (page_cpu.py) and the cohort load (cohort_load.py, its arguments after OTHER).
#   bench/ab.sh /tmp/main-export [cohort_load.py arguments]
set -u
OTHER=$1; shift
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$HERE/.venv/bin/python}
for side in "$OTHER" "$HERE"; do
    echo "== $side: CPU per request (load average $(cut -d' ' -f1 /proc/loadavg))"
    PYTHONPATH="$side/platform" "$PY" "$HERE/bench/page_cpu.py" 2>/dev/null
done
for side in "$OTHER" "$HERE"; do
    echo "== $side: cohort load (load average $(cut -d' ' -f1 /proc/loadavg))"
    PYTHONPATH="$side/platform" "$PY" "$HERE/bench/cohort_load.py" "$@" 2>&1 | grep -v Warning
done
