#!/usr/bin/env bash
# One device-machine session's checks, in order of value, each phase under its own time limit
# (a phase that hangs is cut and the next one runs). Needs, carried: .gpu (made by
# `benchmarks/gpu_paper_run.py prepare`) and .whl (wheels of jsonschema and its needs,
# sacremoses, subword-nmt, mock: the device image lacks them). Writes under $OUT:
#   device.txt          nvidia-smi, the package's device line, the GPU self-check
#   gpu_run.tar.gz      phase B: planned paper-setting train + translate jobs (curves, logs, output)
#   prefetch.txt        phase A: benchmarks/bench_prefetch.py on the GPU
#   compile.txt/.json   phase D: benchmarks/gpu_compile.py (eager vs fused optimiser vs compile)
# Budgets (s): set-up 60, B 330, A 90, D 150: at most 630 with everything cut, about 520 typical.
# Phase B runs the jobs in GPU_WORK (default /tmp/gpu_work), outside the repository's copy, seeded
# from .gpu without overwriting anything already there: a second call on the same warm machine
# sends the working tree again, and a carried .gpu *replaces* the folder there, so jobs run inside
# it lost their .last.pt (2026-11-27: three trains' first 475 s, restarted from update 0). A new
# jobs.json (prepare --append) and new inputs come in; checkpoints, curves and records stay.
# PHASES picks and orders the phases (default "BAD"), B_LIMIT phase B's limit (s), TRAIN_LIMIT the
# seconds after which phase B's trains get SIGTERM (they save .last.pt; the same command again on
# the still-warm machine resumes them; 0: none), CHECK=0 skips the GPU self-check. A pilot session: PHASES=B B_LIMIT=560 CHECK=0 bash benchmarks/device_session.sh
set -u
PHASES=${PHASES:-BAD}
B_LIMIT=${B_LIMIT:-330}
TRAIN_LIMIT=${TRAIN_LIMIT:-0}
CHECK=${CHECK:-1}
GPU_WORK=${GPU_WORK:-/tmp/gpu_work}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
REPO=$(pwd)
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "== $(($(date +%s) - T0)) s: $*"; }

stamp set-up
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || echo "wheel install failed"
export PYTHONPATH=/tmp/site:$REPO/src
STUB="import sys; sys.path.insert(0, '$REPO/benchmarks'); from gpu_calibration import install_stubs; install_stubs()"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  timeout -k 5 50 python3 -c "$STUB
import torch
from mmt_repro.device import describe_device, pick_device
d = pick_device('cuda')
print(describe_device(d))
" 2>&1
  [ "$CHECK" = 1 ] && timeout -k 5 50 python3 benchmarks/gpu_calibration.py --check 2>&1 | tail -n 15
} > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"

phase_B() {
  stamp "B: paper-setting jobs in $GPU_WORK"
  mkdir -p "$GPU_WORK"
  local kept
  kept=$(ls "$GPU_WORK"/results/models/*/*/*.last.pt 2>/dev/null | wc -l)
  [ -f "$GPU_WORK/jobs.json" ] && echo "$GPU_WORK: resuming ($kept .last.pt there)"
  # no-clobber copy (cp -n's exit status differs between coreutils versions: checked below instead)
  cp -rn .gpu/. "$GPU_WORK"/ 2>/dev/null
  if ! cp .gpu/jobs.json "$GPU_WORK"/jobs.json; then
    echo ".gpu/jobs.json missing: run gpu_paper_run.py prepare here and carry .gpu"
    return
  fi
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv -l 30 > "$OUT/gpu_util.csv" 2>&1 &
  local smi=$!
  (cd "$GPU_WORK" && timeout -k 10 "$B_LIMIT" python3 "$REPO/benchmarks/gpu_paper_run.py" run --out "$OUT" \
    --train-limit "$TRAIN_LIMIT") 2>&1 | tail -n 20
  grep -h "epoch [0-9]* done" "$GPU_WORK"/logs/*.train.*.log | tail -n 6
  kill "$smi" 2>/dev/null
  # cut by its limit: the curves and logs so far still come back (no checkpoints)
  [ -f "$OUT/gpu_run.tar.gz" ] || tar czf "$OUT/gpu_run_partial.tar.gz" --exclude='*.pt' -C "$GPU_WORK" logs results
  ls -la "$OUT"
}

phase_A() {
  stamp "A: prefetch"
  timeout -k 5 90 python3 -c "$STUB
import runpy; sys.argv = ['bench_prefetch.py', '--device', 'cuda', '--steps', '60', '--repeats', '2', '--threads', '4']
runpy.run_path('benchmarks/bench_prefetch.py', run_name='__main__')
" 2>&1 | grep -v Warning | tee "$OUT/prefetch.txt" | tail -n 12
}

phase_D() {
  stamp "D: compile"
  timeout -k 5 150 python3 benchmarks/gpu_compile.py --cases bertgen.bertgen --steps 20 --warmup 6 --budget-s 100 \
    --out "$OUT/compile.json" 2>&1 | grep -v -E "^[WICE][0-9]{4} " | tee "$OUT/compile.txt" | tail -n 12
}

for phase in $(echo "$PHASES" | fold -w1); do "phase_$phase"; done
stamp done
