#!/bin/sh
# Checks a built image, with podman or docker (not part of `make test`: it needs a built image):
#   1. the entry point fills an empty work folder and starts JupyterLab, and /lab answers;
#   2. notebook 00 executes in QUICK mode (utils.execute, papermill, on the CPU);
#   3. assignment 00's sample submissions are graded in the grader's bubblewrap sandbox, each with
#      the score grader/assignments/00_measure_first/scores.toml gives it;
#   4. a notebook the learner edits and saves through JupyterLab, in the mounted work folder, keeps
#      the edit when the container is removed and a new one starts (and a deleted one comes back).
#
#   docker/smoke.sh [IMAGE]            # IMAGE: localhost/torch-tips:latest
#
# Environment: ENGINE (podman, else docker), PORT (host port for JupyterLab, 18888), RUN_FLAGS
# (added to every run, e.g. a runtime or ulimits the host needs), SANDBOX_FLAGS (added to the
# grading run: what lets bubblewrap create user namespaces and mount /proc in a container; the
# default depends on ENGINE), LEARNER_UID (the image's, 1000: the work folder is given to it when
# this runs as root). Prints one "ok" line per check; stops at the first failure, exit 1.
# Sandbox flags: rootful podman 4.3 here needed only unmask=/proc/* (without it: "bwrap: Can't mount
# proc on /newroot/proc: Operation not permitted"); its default seccomp profile allows the user
# namespace. Docker's three flags are the README's, not run here (no Docker daemon).
set -eu
IMAGE=${1:-localhost/torch-tips:latest}
ENGINE=${ENGINE:-$(command -v podman >/dev/null 2>&1 && echo podman || echo docker)}
PORT=${PORT:-18888}
RUN_FLAGS=${RUN_FLAGS:-}
LEARNER_UID=${LEARNER_UID:-1000}
if [ -z "${SANDBOX_FLAGS+set}" ]; then
  case $ENGINE in
    *podman*) SANDBOX_FLAGS="--security-opt unmask=/proc/*" ;;
    *) SANDBOX_FLAGS="--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined" ;;
  esac
fi
NOTEBOOK=00_measure_first/00_measure_first.ipynb
NAME=torch-tips-smoke-$$
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/torch-tips-smoke.XXXXXX")  # logs, and the work folder
WORK=$SCRATCH/work
started=$(date +%s)

cleanup() {
  $ENGINE rm -f "$NAME" >/dev/null 2>&1 || true
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; $ENGINE logs "$NAME" 2>/dev/null | tail -20 >&2 || true; exit 1; }
ok() { echo "ok   $* ($(( $(date +%s) - started )) s)"; }
mkdir -m 0755 "$WORK"
if [ "$(id -u)" = 0 ]; then chown "$LEARNER_UID" "$WORK"; fi
# shellcheck disable=SC2086  # RUN_FLAGS and SANDBOX_FLAGS are lists of flags
run() { $ENGINE run --rm $RUN_FLAGS "$@"; }

# Start JupyterLab (the image's own entry point and command) on the work folder; wait for /lab.
start_lab() {
  # shellcheck disable=SC2086
  $ENGINE run -d --name "$NAME" $RUN_FLAGS -p "127.0.0.1:$PORT:8888" -v "$WORK:/home/learner/work" "$IMAGE" >/dev/null \
    || fail "$ENGINE run $IMAGE did not start"
  TOKEN=""
  for _ in $(seq 120); do
    TOKEN=$($ENGINE logs "$NAME" 2>&1 | sed -n 's/.*[?&]token=\([0-9a-f]*\).*/\1/p' | head -n 1)
    [ -n "$TOKEN" ] && [ "$(curl -s -o "$SCRATCH/lab" -w '%{http_code}' "http://127.0.0.1:$PORT/lab?token=$TOKEN")" = 200 ] && break
    sleep 1
  done
  grep -q 'JupyterLab' "$SCRATCH/lab" 2>/dev/null || fail "/lab did not answer 200 with JupyterLab's page in 120 s"
  rm -f "$SCRATCH/lab"
}
api() { curl -fsS -H "Authorization: token $TOKEN" "$@"; }

# 1. Entry point and JupyterLab.
start_lab
[ -f "$WORK/$NOTEBOOK" ] || fail "the entry point did not fill the work folder"
$ENGINE logs "$NAME" 2>&1 | grep -q 'entrypoint: copied [0-9]* released notebook file(s)' \
  || fail "the entry point did not say what it copied"
ok "1. entry point filled the work folder ($(find "$WORK" -name '*.ipynb' | wc -l) notebooks); JupyterLab /lab answered 200"

# 4, first half: the learner edits notebook 00 in JupyterLab (contents API: what Save does) and
# deletes notebook 01; then the container goes.
MARK="smoke edit $$ $(date +%s)"
api "http://127.0.0.1:$PORT/api/contents/$NOTEBOOK?content=1" \
  | MARK=$MARK python3 -c '
import json, os, sys
model = json.load(sys.stdin)
model["content"]["cells"].append({"cell_type": "markdown", "metadata": {}, "source": os.environ["MARK"]})
json.dump({"type": "notebook", "format": "json", "content": model["content"]}, sys.stdout)' \
  | api -X PUT -H 'Content-Type: application/json' --data-binary @- "http://127.0.0.1:$PORT/api/contents/$NOTEBOOK" >/dev/null \
  || fail "could not save notebook 00 through JupyterLab"
api -X DELETE "http://127.0.0.1:$PORT/api/contents/01_tensors_devices/01_tensors_devices.ipynb" \
  || fail "could not delete notebook 01 through JupyterLab"
grep -q "$MARK" "$WORK/$NOTEBOOK" || fail "JupyterLab's save did not reach the mounted folder"
$ENGINE rm -f "$NAME" >/dev/null

# 2. Notebook 00 in QUICK mode (the container's own /tmp: nothing written to the work folder).
run "$IMAGE" sh -c 'python -m utils.execute --only 00_measure_first --device cpu --out /tmp/run \
  && test -s /tmp/run/executed/00_measure_first.ipynb && test -s /tmp/run/measurements.jsonl' \
  >"$SCRATCH/execute" 2>&1 || { tail -30 "$SCRATCH/execute" >&2; fail "notebook 00 did not execute"; }
ok "2. notebook 00 executed in QUICK mode: $(grep -c . "$SCRATCH/execute") lines of output, last: $(tail -n 1 "$SCRATCH/execute")"
rm -f "$SCRATCH/execute"

# 3. Assignment 00's samples graded in the sandbox. autograde refuses to grade when the sandbox
# cannot start (no --no-sandbox here); the probe says so first, with bubblewrap's own error.
# shellcheck disable=SC2086
run $SANDBOX_FLAGS "$IMAGE" sh -c '
set -e
python -c "from grader import sandbox; r = sandbox.probe(); print(\"sandbox:\", r or \"works\"); raise SystemExit(1 if r else 0)"
python -m grader samples --course-dir /tmp/course --assignment 00_measure_first
python -m grader autograde --course-dir /tmp/course --assignment 00_measure_first
python -m grader export --course-dir /tmp/course --to /tmp/grades.csv
python - <<EOF
import csv, tomllib
want = tomllib.load(open("grader/assignments/00_measure_first/scores.toml", "rb"))
got = {r["student_id"].removeprefix("sample_"): float(r["score"]) for r in csv.DictReader(open("/tmp/grades.csv"))
       if r["assignment"] == "00_measure_first" and r["student_id"].startswith("sample_")}
print("scores:", got)
assert got == {k: float(v) for k, v in want.items()}, want
EOF' >"$SCRATCH/grade" 2>&1 || { tail -30 "$SCRATCH/grade" >&2; fail "grading assignment 00's samples in the sandbox failed"; }
ok "3. $(grep '^sandbox:' "$SCRATCH/grade"); assignment 00's samples graded as scores.toml says: $(grep '^scores:' "$SCRATCH/grade")"
rm -f "$SCRATCH/grade"

# 4, second half: a new container on the same folder keeps the edit and restores only what is missing.
start_lab
grep -q "$MARK" "$WORK/$NOTEBOOK" || fail "the learner's edit was overwritten on restart"
api "http://127.0.0.1:$PORT/api/contents/$NOTEBOOK?content=1" | grep -q "$MARK" \
  || fail "JupyterLab does not serve the learner's edit after the restart"
[ -f "$WORK/01_tensors_devices/01_tensors_devices.ipynb" ] || fail "the deleted notebook 01 did not come back"
$ENGINE logs "$NAME" 2>&1 | grep -q 'entrypoint: copied 1 released notebook file(s)' \
  || fail "the restart copied something other than the one deleted notebook"
ok "4. after a new container on the same work folder: the edit saved in JupyterLab is kept, the deleted notebook is back"
echo "smoke: all checks passed for $IMAGE with $ENGINE"
