"""Failures of the grading environment never become grades.

A copy of the course checkout under /tmp grades a class with `python -m grader autograde`, the
way an instructor would from a fresh clone there: first with the course's own `utils` broken
(its setup code cannot import), then repaired.
"""
import re
import shutil
import subprocess
import sys

import pytest

from grader import gradebook
from grader.autograde import GraderEnvironmentError
from grader.errors import CourseError
from grader.grading import parse
from grader.sandbox import Limits, RunResult
from submissions import submit_solutions
from utils.paths import REPO_ROOT

AID = "02_tensor_toolbox"  # among the quickest to grade


@pytest.fixture
def checkout(tmp_path):
    """A copy of the code a grading run needs, under /tmp (pytest's tmp_path lies there)."""
    root = tmp_path / "clone"
    for name in ("grader", "utils", "solutions"):
        shutil.copytree(REPO_ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    assert str(root).startswith("/tmp/")
    return root


def _autograde(root, course_dir):
    return subprocess.run([sys.executable, "-m", "grader", "autograde", "--course-dir", str(course_dir),
                           "--workers", "1"], cwd=root, capture_output=True, text=True, timeout=600)


def test_a_broken_course_install_stops_grading_and_writes_no_scores(checkout, tmp_path):
    course_dir = tmp_path / "course"
    submit_solutions(course_dir, AID, ["honest"])
    # The toolkit the notebook's import cell loads (`from utils import Table, bench, setup`). Not
    # utils/__init__.py: the grader itself imports utils.paths, so breaking that breaks the grader.
    init = checkout / "utils" / "bench.py"
    working = init.read_text()
    init.write_text("raise ImportError('this checkout of the course is broken')\n")

    broken = _autograde(checkout, course_dir)
    assert broken.returncode != 0
    assert "the course's setup code failed" in broken.stderr and "this checkout of the course is broken" in broken.stderr
    assert "nothing was graded" in broken.stderr
    assert gradebook.recorded(course_dir) == {}
    assert not (course_dir / "autograded").exists()

    init.write_text(working)  # repaired: the same checkout under /tmp now grades
    fixed = _autograde(checkout, course_dir)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert set(gradebook.recorded(course_dir)) == {(AID, "honest")}
    scores = [re.search(r": ([\d.]+) / ([\d.]+) in ", line) for line in fixed.stdout.splitlines()
              if line.startswith("[")]
    assert len(scores) == 1 and all(m and m[1] == m[2] for m in scores), fixed.stdout


def _frame(kind, name, data=None):
    import io
    import struct

    import torch

    buffer = io.BytesIO()
    torch.save({"kind": kind, "name": name, "data": data}, buffer)
    return struct.pack(">I", len(buffer.getvalue())) + buffer.getvalue()


def _run(output=b"", returncode=0, timed_out=False, log=""):
    return RunResult(returncode, timed_out, output, False, log, 1.0)


def test_only_frames_sent_before_student_code_can_blame_the_environment():
    limits = Limits()
    setup_failed = _frame("setup", "0", {"error": "ModuleNotFoundError: utils"}) + _frame("setup_done", "")
    assert "ModuleNotFoundError: utils" in parse(_run(setup_failed + _frame("done", "")), limits).environment
    forged = _frame("setup_done", "") + _frame("setup", "0", {"error": "blame the grader"}) + _frame("done", "")
    assert parse(_run(forged), limits).environment is None  # student code wrote it: ignored, never a batch stop
    died_in_setup = parse(_run(returncode=None, timed_out=True, log="Killed"), limits)
    assert "before the course's setup code finished" in died_in_setup.environment
    student_exit = parse(_run(_frame("setup_done", "")), limits)
    assert student_exit.environment is None and "ended its process early" in student_exit.failure


def test_environment_error_is_a_course_error():
    assert issubclass(GraderEnvironmentError, CourseError)  # the CLI prints it and exits 2
