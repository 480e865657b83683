"""Ctrl-C and SIGTERM stop `python -m grader autograde` cleanly: at once, every process ended, one
line of explanation, a non-zero exit, and a rerun that loses and duplicates nothing."""
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib

import psutil
import pytest
from nbgrader.api import Gradebook

from grader import cli, course
from grader.course import ASSIGNMENTS_DIR
from utils.paths import REPO_ROOT

pytestmark = pytest.mark.busy  # gradings with two workers

AID = "00_measure_first"  # samples of a few seconds each
KEEP = ("correct", "naive", "cpu_zeros")  # three students: two sandboxes at once and one in the queue


def _autograde(course_dir):
    return subprocess.Popen([sys.executable, "-m", "grader", "autograde", "--course-dir", str(course_dir),
                             "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO_ROOT, start_new_session=True)  # its own group, as a terminal job


def _wait_for_sandboxes(proc) -> list[psutil.Process]:
    """Block until grading has started, then return every process the run has (workers, sandboxes)."""
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("grading "):
            break
    else:
        pytest.fail("autograde ended before grading started:\n" + "".join(lines) + proc.stderr.read())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        family = psutil.Process(proc.pid).children(recursive=True)
        if any(p.name() == "bwrap" for p in family if p.is_running()):
            return family
        time.sleep(0.2)
    pytest.fail("no sandbox started within 30 s")


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    folder = tmp_path_factory.mktemp("prepared")
    assert cli.main(["samples", "--course-dir", str(folder), "--assignment", AID]) == 0
    for student in (folder / "submitted").iterdir():
        if student.name.removeprefix("sample_") not in KEEP:
            shutil.rmtree(student)
    return folder


@pytest.fixture
def course_dir(prepared, tmp_path):
    """A fresh copy for each test: assignment generated, nothing graded yet."""
    return shutil.copytree(prepared, tmp_path / "course")


@pytest.mark.parametrize("how", ["ctrl-c twice", "sigterm"])
def test_a_signal_stops_grading_at_once_and_leaves_nothing_running(course_dir, how):
    proc = _autograde(course_dir)
    family = _wait_for_sandboxes(proc)
    if how == "sigterm":  # a scheduler or `kill`: the main process alone
        proc.send_signal(signal.SIGTERM)
    else:  # a terminal's Ctrl-C reaches the whole foreground group; an impatient instructor presses it twice
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)
    started = time.monotonic()
    _, err = proc.communicate(timeout=60)
    waited = time.monotonic() - started
    assert proc.returncode == (143 if how == "sigterm" else 130)
    assert waited < 20, f"took {waited:.0f} s to stop"  # a sandbox may run 180 s: nothing waited for one
    assert err.strip().count("\n") == 0 and "Traceback" not in err and "interrupted by SIG" in err, err
    _, left = psutil.wait_procs(family, timeout=10)  # killed processes need a moment to be reaped
    assert not left, f"still running after the grader exited: {[p.cmdline() for p in left]}"

    if how == "sigterm":
        return
    rerun = subprocess.run([sys.executable, "-m", "grader", "autograde", "--course-dir", str(course_dir)],
                           capture_output=True, text=True, cwd=REPO_ROOT)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    expected = tomllib.loads((ASSIGNMENTS_DIR / AID / "scores.toml").read_text())
    with Gradebook(course.nbgrader_config(course_dir).CourseDirectory.db_url) as gb:
        submissions = gb.find_assignment(AID).submissions
        scores = {s.student.id: s.score for s in submissions}
    assert len(submissions) == len(scores) == len(KEEP)  # each student exactly once
    assert scores == {f"sample_{name}": expected[name] for name in KEEP}
