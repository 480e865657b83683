"""Cheats, broken submissions and honest students, graded in ONE batch.

Every category of DESIGN.md's threat model has at least one submission here (``submissions.py``).
The batch (graded once per session with every bundled sample, ``conftest.py``) must give every
honest student full marks, no cheat more than an untouched stub, leave the gradebook, the repo
and other students' files alone, and leave no process running.
"""
import os
import subprocess
from pathlib import Path

import pytest

from grader import sandbox
from grader.autograde import autograde
from submissions import AID, CHEATS, LIMITS, OTHER_CHEATS, REPO, hash_tree, repo_state, submit_solutions, total_points

ADVERSARIAL = ("stub", "cheat_", "honest_", "broken_")


def _stray_processes() -> list[str]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            uid = int(text.split("\nUid:\t")[1].split("\t")[0])
            cmdline = (status.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if sandbox.UID_BASE <= uid < sandbox.UID_BASE + 1000 or b"4242" in cmdline:
            found.append(f"{status.parent.name}: {cmdline!r}")
    return found


@pytest.fixture(scope="module")
def batch(graded_course):
    """The adversarial part of the session's graded batch, by student."""
    outcomes = {s: o for (s, _), o in graded_course.outcomes.items() if s.startswith(ADVERSARIAL)}
    return {"dir": graded_course.dir, "outcomes": outcomes, "all": graded_course.outcomes,
            "others_before": graded_course.others_before, "repo_before": graded_course.repo_before}


def test_every_submission_gets_a_score(batch):
    for student, outcome in batch["outcomes"].items():
        assert outcome.error is None, outcome.line()
        assert outcome.max_score == total_points(outcome.assignment) > 0, outcome.line()


def test_honest_students_keep_full_marks(batch):
    honest = {s: o for s, o in batch["outcomes"].items() if s.startswith("honest_")}
    assert len(honest) == 6
    for student, outcome in honest.items():
        assert outcome.score == outcome.max_score > 0, outcome.line()


def test_no_cheat_scores_above_an_untouched_stub(batch):
    outcomes = batch["outcomes"]
    cheats = {s: o for s, o in outcomes.items() if s.startswith("cheat_")}
    # + background writer, file writer, metadata edits, shadow files
    assert len(cheats) == len(CHEATS) + len(OTHER_CHEATS) + 4
    for student, outcome in cheats.items():
        stub = outcomes["stub"] if outcome.assignment == AID else outcomes[f"stub_{outcome.assignment}"]
        assert outcome.score <= stub.score, outcome.line()


def test_broken_submissions_get_clear_messages(batch):
    expected = {"broken_invalid_json": "not valid JSON", "broken_not_utf8": "not UTF-8",
                "broken_not_a_notebook": "not a Jupyter notebook", "broken_missing": "found answers.txt"}
    for student, message in expected.items():
        outcome = batch["outcomes"][student]
        assert outcome.score == 0 and message in outcome.note, outcome.line()
    assert "named 03_building_models.ipynb" in batch["outcomes"]["honest_renamed"].note
    assert "kernel 'something-else' was ignored" in batch["outcomes"]["honest_metadata_edited"].note


def test_gradebook_holds_exactly_the_reported_scores(batch, tmp_path):
    from grader import cli

    out = tmp_path / "grades.csv"
    assert cli.main(["export", "--course-dir", str(batch["dir"]), "--to", str(out)]) == 0
    import csv
    rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(out.open())}
    graded = {key: o for key, o in batch["all"].items() if o.error is None}
    assert {s for s, _ in rows} == {s for s, _ in graded}
    for key, outcome in graded.items():  # nbgrader also lists 0 for assignments not submitted
        assert float(rows[key]["score"]) == outcome.score
        assert float(rows[key]["max_score"]) == outcome.max_score == total_points(key[1])


def test_files_and_repo_untouched_and_nothing_left_running(batch):
    assert hash_tree(batch["dir"] / "submitted") == batch["others_before"]
    assert repo_state() == batch["repo_before"]
    assert _stray_processes() == []


def test_feedback_reveals_no_hidden_checks(feedback_pages):
    checks_source = (REPO / "grader" / "assignments" / "03_building_models" / "checks.py").read_text()
    secret_lines = [line.strip() for line in checks_source.splitlines() if "expect(" in line][:5]
    assert feedback_pages
    for page in feedback_pages:
        text = page.read_text()
        assert "CONFIGS" not in text and "FOLD_CASES" not in text
        assert not any(line in text for line in secret_lines)


def test_grading_is_deterministic(batch):
    course_dir = batch["dir"]
    again = autograde(course_dir, student_id="honest_reference", workers=1, report=lambda _: None, force=True,
                      limits=LIMITS)
    assert [o.score for o in again] == [batch["outcomes"]["honest_reference"].score]
    again = autograde(course_dir, student_id="cheat_fake_parameters", workers=1, report=lambda _: None, force=True,
                      limits=LIMITS)
    assert [o.score for o in again] == [batch["outcomes"]["cheat_fake_parameters"].score]


def test_a_killed_run_resumes_without_losing_or_doubling(tmp_path):
    aid = "02_tensor_toolbox"  # among the quickest to grade: the point is the ledger, not the checks
    course_dir = tmp_path / "course"
    students = ["s0", "s1"]  # the first is recorded before the kill, the second is not
    submit_solutions(course_dir, aid, students)
    proc = subprocess.Popen([os.sys.executable, "-m", "grader", "autograde", "--course-dir", str(course_dir),
                             "--workers", "1"], cwd=REPO, stdout=subprocess.PIPE, text=True, start_new_session=True)
    for line in proc.stdout:
        if line.startswith("[1/"):
            os.killpg(proc.pid, 9)
            break
    proc.wait()
    outcomes = autograde(course_dir, workers=2, report=lambda _: None, limits=LIMITS)
    assert sorted(o.student for o in outcomes) == students
    assert sum(o.skipped for o in outcomes) >= 1
    assert all(o.score == o.max_score > 0 for o in outcomes)
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        assert sorted(s.student.id for s in gb.find_assignment(aid).submissions) == students
    (course_dir / "gradebook.db").unlink()  # a lost gradebook: the ledger alone must not keep anything
    again = autograde(course_dir, workers=2, report=lambda _: None, limits=LIMITS)
    assert not any(o.skipped for o in again) and all(o.score == o.max_score > 0 for o in again)
