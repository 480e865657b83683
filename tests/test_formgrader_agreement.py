"""formgrader and the course grader agree: formgrader's "Autograde" button (nbgrader's Autograde app,
also `nbgrader autograde`) runs the course grader, and the course grader notices a gradebook that
changed behind its back instead of keeping its cached result."""
import os
import subprocess
import tomllib

import pytest
from nbgrader.api import Gradebook

from grader import cli, course
from grader.course import ASSIGNMENTS_DIR
from submissions import nbgrader

pytestmark = pytest.mark.busy  # nbgrader and the course grader in subprocesses

AID = "00_measure_first"
STUDENT = "sample_current_device"  # passes every visible test; a hidden check takes 2 points


def _score(course_dir, student=STUDENT):
    with Gradebook(course.nbgrader_config(course_dir).CourseDirectory.db_url) as gb:
        return gb.find_submission(AID, student).score


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course_dir = tmp_path_factory.mktemp("agree")
    assert cli.main(["samples", "--assignment", AID, "--course-dir", str(course_dir)]) == 0
    for folder in (course_dir / "submitted").iterdir():
        if folder.name != STUDENT:
            subprocess.run(["rm", "-rf", str(folder)], check=True)
    # as `nbgrader collect` leaves it: the exchange's feedback is filed under the submission's timestamp
    (course_dir / "submitted" / STUDENT / AID / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
    (course_dir / "submitted" / STUDENT / AID / "submission_secret.txt").write_text("4f1c2e")
    assert cli.main(["autograde", "--course-dir", str(course_dir)]) == 0
    return course_dir


def test_the_autograde_button_runs_the_course_grader(graded):
    expected = tomllib.loads((ASSIGNMENTS_DIR / AID / "scores.toml").read_text())["current_device"]
    done = nbgrader("autograde", AID, "--student", STUDENT, "--force", cwd=graded)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{STUDENT} {AID}: {expected} / 10" in done.stderr  # the course grader's own report, via the hook
    assert _score(graded) == expected  # plain nbgrader (visible tests only) would have given 10
    feedback = (graded / "autograded" / STUDENT / AID / f"{AID}.ipynb").read_text()
    assert "Grader: not passed" in feedback  # the course grader's notebook, not nbgrader's execution


def test_a_score_changed_behind_the_graders_back_is_graded_again(graded, capsys):
    expected = _score(graded)
    with Gradebook(course.nbgrader_config(graded).CourseDirectory.db_url) as gb:
        for grade in gb.find_submission_notebook(AID, AID, STUDENT).grades:
            grade.auto_score = grade.max_score  # what an unsandboxed visible-tests-only grading would write
        gb.db.commit()
    assert _score(graded) != expected
    capsys.readouterr()
    assert cli.main(["autograde", "--course-dir", str(graded)]) == 0
    out = capsys.readouterr().out
    assert "(unchanged, kept)" not in out and f"{STUDENT} {AID}: {expected:g} / 10 in" in out
    assert _score(graded) == expected


def test_release_and_release_feedback_use_the_instructors_exchange(graded):
    """formgrader's Release and Release Feedback (nbgrader's exchange) work out of the box: the course's
    configuration puts the exchange in the course directory, owned by the instructor."""
    released = nbgrader("release_assignment", AID, "--force", cwd=graded)
    assert released.returncode == 0, released.stdout + released.stderr
    outbound = graded / "exchange" / course.COURSE_ID / "outbound" / AID / f"{AID}.ipynb"
    assert outbound.is_file() and outbound.stat().st_uid == os.geteuid()
    assert cli.main(["feedback", "--course-dir", str(graded)]) == 0
    sent = nbgrader("release_feedback", AID, cwd=graded)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert list((graded / "exchange" / course.COURSE_ID / "feedback").glob("*.html"))  # filed by hash for fetch_feedback
