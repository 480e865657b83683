"""An LMS download graded the instructor's usual way: nbgrader's zip_collect files the submissions,
a roster import names the students, `python -m grader autograde` grades them, the export lists
them by name. README: "Submissions from an LMS"."""
import csv
import tomllib
import zipfile

import nbformat
import pytest

from grader import cli, course
from grader.course import ASSIGNMENTS_DIR
from grader.sample_submissions import fill, sample_answers
from submissions import nbgrader

pytestmark = pytest.mark.busy  # a grading with two workers

AID = "00_measure_first"
# The README's named_regexp for Canvas downloads: <name>[_LATE]_<user id>_<submission id>_<file>[-<n>].ipynb
# (Canvas adds -1, -2 ... to a resubmitted file). nbgrader matches it against the ABSOLUTE path.
CANVAS = r".*/[^/_]+(?:_LATE)?_(?P<student_id>\d+)_\d+_(?P<file_id>\d\d_[a-z_]+?)(?:-\d+)?\.ipynb$"
FILES = {"doejane_LATE_1234_56789_00_measure_first.ipynb": "correct",
         "smithjohn_2345_67890_00_measure_first-1.ipynb": "naive"}
ROSTER = "id,first_name,last_name,email\n1234,Jane,Doe,jane@example.edu\n2345,John,Smith,john@example.edu\n"


def _nbgrader(*args: str, cwd):
    done = nbgrader(*args, cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_lms_download_is_collected_named_graded_and_exported(tmp_path, capsys):
    course_dir = tmp_path / "course"
    assignment = course.find(AID)
    released = nbformat.read(assignment.release_path, as_version=4)
    answers = sample_answers(assignment)
    archive = course_dir / "downloaded" / AID / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "submissions.zip", "w") as download:
        for name, sample in FILES.items():
            download.writestr(name, nbformat.writes(fill(released, answers[sample])))

    _nbgrader("zip_collect", AID, f"--FileNameCollectorPlugin.named_regexp={CANVAS}", cwd=course_dir)
    assert sorted(p.relative_to(course_dir / "submitted").as_posix()
                  for p in (course_dir / "submitted").rglob("*.ipynb")) == [f"1234/{AID}/{AID}.ipynb",
                                                                             f"2345/{AID}/{AID}.ipynb"]
    (tmp_path / "roster.csv").write_text(ROSTER)
    _nbgrader("db", "student", "import", str(tmp_path / "roster.csv"), cwd=course_dir)

    capsys.readouterr()
    assert cli.main(["autograde", "--course-dir", str(course_dir)]) == 0  # `python -m grader autograde`
    graded = capsys.readouterr().out
    expected = tomllib.loads((ASSIGNMENTS_DIR / AID / "scores.toml").read_text())
    assert f"1234 {AID}: {expected['correct']} / 10" in graded, graded
    assert f"2345 {AID}: {expected['naive']} / 10" in graded, graded

    assert cli.main(["export", "--course-dir", str(course_dir), "--to", str(tmp_path / "grades.csv")]) == 0
    rows = {r["student_id"]: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert (rows["1234"]["first_name"], rows["1234"]["last_name"], float(rows["1234"]["score"])) == \
        ("Jane", "Doe", expected["correct"])
    assert (rows["2345"]["first_name"], rows["2345"]["last_name"]) == ("John", "Smith")
