#!/usr/bin/env bash
# One prepared run on an offline GPU host, from the repository root, with the notebook wheels in .whl/
# (docs: ../shared/gpu-runs/HOW.md). Each step has its own timeout and leaves its files in $OUT as it ends.
#   bash deploy/gpu-host.sh STEP...   STEP: floor | overlap | quick | tests | full:NB,NB,...
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

overlap() {  # does one stream overlap kernels? summed vs merged kernel time vs wall, T089's odd float32 matmul
  python3 - <<'PY'
import torch
from torch.profiler import ProfilerActivity, profile
from utils import bench, trace
n = 4095; a = torch.randn(n, n, device="cuda"); f = lambda: a @ a
wall = bench.measure(f, device="cuda").median
for calls in (1, 3):
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls): f()
        torch.cuda.synchronize()
    spans = sorted((e.start_ns(), e.end_ns(), e.name()[:40]) for e in prof.profiler.kineto_results.events() if trace.kineto_gpu_work(e))
    summed = sum(e - s for s, e, _ in spans) / 1e9 / calls; merged = bench.busy_ns([(s, e) for s, e, _ in spans]) / 1e9 / calls
    overlaps = sum(1 for x, y in zip(spans, spans[1:]) if y[0] < x[1])
    print(f"overlap: {calls} call(s): wall {wall*1e3:.2f} ms, summed {summed*1e3:.2f} ms, merged {merged*1e3:.2f} ms, "
          f"{len(spans)} GPU events, {overlaps} start before the previous ends; {spans[0][2]}")
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
    overlap) overlap ;;
    quick) quick ;;
    tests) tests ;;
    full:*) IFS=, read -ra nbs <<< "${step#full:}"; full "${nbs[@]}" ;;
    *) echo "unknown step: $step (floor | overlap | quick | tests | full:NB,NB)" >&2; exit 2 ;;
  esac
done
