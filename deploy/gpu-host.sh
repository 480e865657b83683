#!/usr/bin/env bash
# One prepared run on an offline GPU host, from the repository root, with the notebook wheels in .whl/
# (docs: ../shared/gpu-runs/HOW.md). Each step has its own timeout and leaves its files in $OUT as it ends.
#   bash deploy/gpu-host.sh STEP...   STEP: floor | quick | tests | full:NB,NB,...
# Times: QUICK_S, TESTS_S, FULL_S (seconds). Tests: TESTS (files).
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MPLBACKEND=Agg JUPYTER_PATH=/tmp/site/share/jupyter
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
python3 -c "import torch, sys, os; print(sys.version.split()[0], 'torch', torch.__version__, torch.cuda.get_device_name(), 'cores', os.cpu_count())"

pack() {  # pack DIR NAME: records, run.json, report and executed notebooks, not the bytecode cache
  (cd "$1" && tar -czf "$OUT/$2.tgz" --exclude=.pycache --exclude='executed/*.html' .); ls -la "$OUT/$2.tgz"; }

floor() {
  python3 - <<'PY'
import time; t0 = time.perf_counter()
import torch, torchvision; t1 = time.perf_counter()
x = torch.ones(1, device="cuda"); torch.cuda.synchronize(); t2 = time.perf_counter()
m = torch.randn(4096, 4096, device="cuda"); (m @ m).sum().item(); t3 = time.perf_counter()
print(f"floor: import {t1-t0:.2f} s, cuda context {t2-t1:.2f} s, first matmul {t3-t2:.2f} s")
PY
}

quick() {
  SECONDS=0
  timeout "${QUICK_S:-290}" python3 -m utils.execute --device cuda --check --out /tmp/b/quick 2>&1 \
    | grep -v "without encryption" > "$OUT/quick.log"
  echo "quick rc ${PIPESTATUS[0]} wall ${SECONDS}s"
  grep -E "ok in|FAILED|papermill time|check failed|report:" "$OUT/quick.log"; pack /tmp/b/quick quick
}

tests() {
  SECONDS=0
  COURSE_REQUIRE_CUDA=1 timeout "${TESTS_S:-150}" python3 -m pytest -q -p no:cacheprovider -o addopts= -rfEs \
    -k "not every_comparison_has_sentences and not both_phase_charts" \
    ${TESTS:-tests/test_cuda.py tests/test_release_workflow.py tests/test_simulated_rng.py tests/test_utils_bench.py
      tests/test_utils_device.py tests/test_utils_memory.py tests/test_utils_records.py tests/test_verdict.py
      tests/test_why.py tests/test_present.py tests/test_profiling.py tests/test_speed_knobs.py tests/test_claims.py
      tests/test_references.py tests/test_h100_records.py} > "$OUT/tests.log" 2>&1
  echo "tests rc $? wall ${SECONDS}s"; tail -40 "$OUT/tests.log"
}

full() {  # full NB...
  SECONDS=0
  timeout "${FULL_S:-170}" python3 -m utils.execute --full --device cuda --check --only "$@" --out /tmp/b/full 2>&1 \
    | grep -v "without encryption" > "$OUT/full.log"
  echo "full rc ${PIPESTATUS[0]} wall ${SECONDS}s"
  grep -E "ok in|FAILED|papermill time|check failed" "$OUT/full.log"; pack /tmp/b/full full
}

rm -rf /tmp/b; mkdir -p /tmp/b
for step in "$@"; do
  case $step in
    floor) floor ;;
    quick) quick ;;
    tests) tests ;;
    full:*) IFS=, read -ra nbs <<< "${step#full:}"; full "${nbs[@]}" ;;
    *) echo "unknown step: $step (floor | quick | tests | full:NB,NB)" >&2; exit 2 ;;
  esac
done
