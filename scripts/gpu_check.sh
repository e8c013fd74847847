#!/usr/bin/env bash
# The GPU check (issue 19): one prepared run for a GPU machine as the team gets one (its own
# Python 3.12 with torch and triton preinstalled, no package registry, no bubblewrap, 15 minutes of
# machine time in all). It
#   1. picks the Python (--python, $PYTHON, else python3) and prints what it found: Python, torch,
#      triton, numpy, pydantic, the GPU (nvidia-smi), bubblewrap;
#   2. makes the few pure-Python packages the grading path imports available: the ones the
#      machine lacks are unpacked from the wheels in scripts/gpu_wheels/ (filled here, with the
#      registry, by scripts/fetch_gpu_wheels.sh; not committed) into .gpu-venv, a venv over the
#      machine's own site-packages (--prepare-only stops after this and the versions);
#   3. grades, with --device cuda, every exercise's reference and stub and a sample of its
#      known-wrong variants, the N x N memory variants always (scripts/gpu_check.py: parallel
#      workers, each grading time-boxed, one deadline for all); the references of perf exercises
#      go through the perf stage when this checkout's judge has one (else a line says so);
#   4. writes summary.json and summary.txt (and nvidia-smi's memory samples) under --out, $OUT,
#      or ./gpu-check-out.
# --device cpu is a dry run of the same path that CI runs (tests/test_gpu_check_script.py).
# Without bubblewrap it grades with --sandbox none and says so.
#
# Usage: scripts/gpu_check.sh [--device cuda|cpu] [--out DIR] [--only a,b] [--sample N]
#                             [--variants K] [--jobs J] [--budget-s S] [--python PY] [--perf auto|on|off]
#                             [--prepare-only]
# Overrides (tests): GPU_CHECK_WHEELS (wheel folder), GPU_CHECK_VENV, GPU_CHECK_NEED (modules).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
device=cuda
out="${OUT:-$root/gpu-check-out}"
py="${PYTHON:-python3}"
budget=270
total_limit=300
pass_args=()
prepare_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --python) py="$2"; shift 2 ;;
    --budget-s) budget="$2"; shift 2 ;;
    --prepare-only) prepare_only=1; shift ;;
    --only|--sample|--variants|--jobs|--perf|--job-timeout-s|--seed) pass_args+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,/^# Overrides/p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$device" in cuda|cpu) ;; *) echo "gpu_check.sh: --device must be cuda or cpu" >&2; exit 2 ;; esac
mkdir -p "$out" || exit 2
out="$(cd "$out" && pwd)"
started=$(date +%s)

echo "== inferprep GPU check: device $device, output $out"
if ! command -v "$py" >/dev/null 2>&1; then echo "gpu_check.sh: no Python at $py" >&2; exit 2; fi

# -- 2. the packages the grading path imports: what is present is used; what is missing comes ----
# from the carried wheels, unpacked into a virtual environment that sees the machine's own
# packages (torch, triton): the sandboxed child runs "python -I", which ignores PYTHONPATH but
# keeps the site-packages of its venv, so PYTHONPATH alone would not reach it.
wheels="${GPU_CHECK_WHEELS:-$here/gpu_wheels}"
venv="${GPU_CHECK_VENV:-$root/.gpu-venv}"
read -r -a need_mods <<< "${GPU_CHECK_NEED:-pydantic pydantic_core numpy annotated_types typing_extensions typing_inspection}"
missing=()
for m in "${need_mods[@]}"; do
  "$py" -c "import $m" >/dev/null 2>&1 || missing+=("$m")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "-- missing here: ${missing[*]}; unpacking the carried wheels from $wheels into $venv"
  if ! ls "$wheels"/*.whl >/dev/null 2>&1; then
    echo "gpu_check.sh: $wheels has no wheels; run scripts/fetch_gpu_wheels.sh where a registry is reachable" >&2
    exit 2
  fi
  rm -rf "$venv"
  "$py" -m venv --system-site-packages --without-pip "$venv" || { echo "gpu_check.sh: cannot make $venv" >&2; exit 2; }
  py="$venv/bin/python"
  # A wheel is a zip of the files to put in site-packages; unpacking it is what "pip install" does
  # for a pure-Python one (and for pydantic_core's native module, built for this Python's ABI).
  "$py" - "$wheels"/*.whl <<'EOF' || exit 2
import importlib, sys, sysconfig, zipfile
site = sysconfig.get_paths()["purelib"]
for w in sys.argv[1:]:
    name = w.rsplit("/", 1)[-1].split("-")[0]
    try:  # keep what the machine has (its torch's numpy, say); add only what it lacks
        importlib.import_module(name)
        print(f"   present: {name}")
        continue
    except Exception:
        pass
    zipfile.ZipFile(w).extractall(site)
    print(f"   unpacked: {w.rsplit('/', 1)[-1]}")
EOF
  chmod -R a+rX "$venv"
  still=()
  for m in "${missing[@]}"; do "$py" -I -c "import $m" >/dev/null 2>&1 || still+=("$m"); done
  if [ ${#still[@]} -gt 0 ]; then echo "gpu_check.sh: still missing after unpacking: ${still[*]}" >&2; exit 2; fi
fi
export PYTHONPATH="$root/platform${PYTHONPATH:+:$PYTHONPATH}"

# -- 1. versions --------------------------------------------------------------------------------
"$py" - <<'EOF'
import importlib, platform
print("-- python", platform.python_version(), "at", __import__("sys").executable)
for name in ("torch", "triton", "numpy", "pydantic", "pydantic_core", "pyseccomp", "inferprep"):
    try:
        m = importlib.import_module(name)
        print(f"-- {name} {getattr(m, '__version__', '?')}  ({m.__file__})")
    except Exception as e:
        print(f"-- {name}: absent ({type(e).__name__}: {e})")
EOF
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader || true
else
  echo "-- nvidia-smi: absent"
fi
sandbox_args=()
if command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / --unshare-net true >/dev/null 2>&1; then
  echo "-- bubblewrap: works here; the runner's default sandbox (auto) is used"
else
  echo "-- bubblewrap: absent or unusable here; grading with --sandbox none (own uid, seccomp, rlimits; no allow-listed root)"
  sandbox_args=(--sandbox none)
fi

if [ "$prepare_only" = 1 ]; then echo "== prepared (--prepare-only): python $py"; exit 0; fi

# -- device memory, sampled from the trusted side (the whole device, every process) --------------
smi_pid=""
if [ "$device" = cuda ] && command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=timestamp,memory.used,memory.total --format=csv,noheader,nounits -lms 500 \
    > "$out/nvidia-smi-memory.csv" 2>/dev/null &
  smi_pid=$!
fi

# -- 3. the gradings -----------------------------------------------------------------------------
left=$(( total_limit - ($(date +%s) - started) ))
timeout --kill-after=10 "$left" "$py" "$here/gpu_check.py" --device "$device" --out "$out" --budget-s "$budget" \
  "${sandbox_args[@]}" "${pass_args[@]}"
rc=$?
if [ -n "$smi_pid" ]; then kill "$smi_pid" 2>/dev/null; wait "$smi_pid" 2>/dev/null; fi
if [ -s "$out/nvidia-smi-memory.csv" ]; then
  peak=$(awk -F', ' '{ if ($2 > m) m = $2; t = $3 } END { print m " MiB of " t " MiB" }' "$out/nvidia-smi-memory.csv")
  echo "-- peak device memory used (nvidia-smi, all processes): $peak" | tee -a "$out/summary.txt"
fi
[ $rc -eq 124 ] && echo "gpu_check.sh: the run passed its ${left} s limit and was stopped" >&2
echo "== done in $(( $(date +%s) - started )) s (exit $rc); summary: $out/summary.txt"
exit $rc
