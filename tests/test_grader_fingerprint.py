"""grading.fingerprint: what decides an assignment's grades. A submission graded under the same
fingerprint is kept on the next run, so an edit to one assignment's checks must regrade that
assignment alone, and an edit to the code every assignment shares must regrade them all."""
import json
import os
import shutil
import subprocess
import sys

from utils.paths import REPO_ROOT

# Run in a copy of the grader: each edit is appended to a file there, and every assignment's
# fingerprint is computed after it (the course's notebooks are the checkout's).
SCRIPT = r"""
import json, sys
from pathlib import Path

import grader
from grader import course, grading

root = Path(sys.argv[1])
assert Path(grader.__file__).resolve().parent == root.resolve(), grader.__file__
ids = [a.id for a in course.assignments()]
steps = [("before", {a: grading.fingerprint(a) for a in ids})]
for edited in sys.argv[2:]:
    path = root / edited
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    steps.append((edited, {a: grading.fingerprint(a) for a in ids}))
print(json.dumps(steps))
"""

EDITS = {  # file edited (cumulatively, in this order) -> the assignments whose fingerprint changes
    "assignments/09_profiling/checks.py": {"09_profiling"},
    "assignments/03_building_models/probes.py": {"03_building_models"},
    "assignments/05_memory/samples/other_style/release.py": set(),   # samples test the grader, grade no one
    "assignments/05_memory/scores.toml": set(),
    "checking.py": "all",
    "probe_helpers.py": "all",
    "runner.py": "all",
    "zygote.py": "all",
    "grading.py": "all",
}


def test_an_edit_changes_the_fingerprints_of_the_assignments_it_can_change(tmp_path):
    copy = tmp_path / "grader"
    shutil.copytree(REPO_ROOT / "grader", copy, ignore=shutil.ignore_patterns("__pycache__", "sample_records"))
    assert all((copy / edited).is_file() for edited in EDITS)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # the toolkit (utils) from the checkout, the grader copied
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(copy), *EDITS], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    steps = json.loads(out.stdout)
    everyone = set(steps[0][1])
    assert len(everyone) == 12 and len(set(steps[0][1].values())) == 12
    for (_, before), (edited, after) in zip(steps, steps[1:]):
        changed = {a for a in everyone if before[a] != after[a]}
        assert changed == (everyone if EDITS[edited] == "all" else EDITS[edited]), edited
