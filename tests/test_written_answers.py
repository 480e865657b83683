"""Written ("measure and explain") answers: the autograder leaves their points to the instructor."""
import nbformat
import pytest
from nbgrader.api import Gradebook

from grader import cli, course
from grader.autograde import autograde
from grader.sample_submissions import fill, solution_answers
from submissions import LIMITS, prepared_release, submit

pytestmark = pytest.mark.busy  # gradings with two workers

AID = "11_inference"
WRITTEN, MEASURED = "explain_max_batch", "measure_max_batch"


def _source():
    return nbformat.read(course.find(AID).source_dir / f"{AID}.ipynb", as_version=4)


def test_three_notebooks_have_a_written_answer_next_to_a_measurement():
    with_written = []
    for assignment in course.assignments():
        nb = nbformat.read(assignment.source_dir / assignment.notebook_name, as_version=4)
        written, measured = course.manual_cells(nb), course.measurement_cells(nb)
        if written:
            with_written.append(assignment.id)
            assert measured, f"{assignment.id}: a written answer needs a measurement cell before it"
            assert all(c.cell_type == "markdown" for c in nb.cells
                       if c.metadata.get("nbgrader", {}).get("grade_id") in written)
    assert len(with_written) >= 3, with_written


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course_dir = tmp_path_factory.mktemp("written")
    release = prepared_release(course_dir, AID)
    code = solution_answers(course.find(AID))
    answers = {
        "wrote": {**code, MEASURED: "print('my sweep')\n", WRITTEN: "I chose max_batch 8: it keeps up.\n"},
        "left_blank": code,  # the written answer exactly as released
    }
    for student, cells in answers.items():
        submit(course_dir, student, AID, fill(release, cells))
    outcomes = {o.student: o for o in autograde(course_dir, AID, workers=2, report=lambda _: None, limits=LIMITS)}
    return course_dir, outcomes


def test_written_points_wait_for_the_instructor(graded):
    course_dir, outcomes = graded
    points = course.manual_cells(_source())
    written_points = sum(c.metadata.nbgrader["points"] for c in _source().cells
                         if c.metadata.get("nbgrader", {}).get("grade_id") in points)
    wrote, blank = outcomes["wrote"], outcomes["left_blank"]
    assert wrote.error is None and blank.error is None
    assert wrote.score == blank.score == wrote.max_score - written_points  # every code test passed
    assert wrote.pending == written_points and blank.pending == 0
    assert "left to the instructor" in wrote.line() and "left to the instructor" not in blank.line()
    assert wrote.line().endswith(f": +{written_points:g} written, left to the instructor (formgrader's Manual Grading)")
    assert blank.blank == written_points and wrote.blank == 0
    assert blank.line().endswith(f": written answer left blank: 0 / {written_points:g}, nothing to grade")
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        grade = gb.find_grade(WRITTEN, AID, AID, "wrote")
        assert grade.auto_score is None and grade.needs_manual_grade
        blank_grade = gb.find_grade(WRITTEN, AID, AID, "left_blank")
        assert blank_grade.auto_score == 0 and not blank_grade.needs_manual_grade
        assert gb.find_submission(AID, "wrote").needs_manual_grade


def test_formgrader_sees_the_answer_and_the_measurement_code(graded):
    course_dir, _ = graded
    nb = nbformat.read(course_dir / "autograded" / "wrote" / AID / f"{AID}.ipynb", as_version=4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    assert cells[WRITTEN].source == "I chose max_batch 8: it keeps up.\n"
    assert cells[MEASURED].source == "print('my sweep')\n"
    assert not cells[MEASURED].outputs  # the grader never runs a measurement


def test_an_instructors_score_survives_regrading(graded):
    course_dir, _ = graded
    db = f"sqlite:///{course_dir / 'gradebook.db'}"
    with Gradebook(db) as gb:
        grade = gb.find_grade(WRITTEN, AID, AID, "wrote")
        grade.manual_score = 1.5
        grade.needs_manual_grade = False
        gb.db.commit()
        before = gb.find_submission(AID, "wrote").score
    [again] = autograde(course_dir, AID, "wrote", workers=1, report=lambda _: None, force=True, limits=LIMITS)
    assert again.pending == 0 and again.score == before
    with Gradebook(db) as gb:
        grade = gb.find_grade(WRITTEN, AID, AID, "wrote")
        assert grade.manual_score == 1.5 and not grade.needs_manual_grade


def test_the_cli_says_what_is_left_to_the_instructor(graded, capsys):
    course_dir, _ = graded
    release = nbformat.read(course_dir / "release" / AID / f"{AID}.ipynb", as_version=4)
    folder = course_dir / "submitted" / "late" / AID
    folder.mkdir(parents=True)
    nbformat.write(fill(release, {WRITTEN: "Batches of 4 keep up here.\n"}), folder / f"{AID}.ipynb")
    assert cli.main(["autograde", "--course-dir", str(course_dir), "--student", "late"]) == 0
    out = capsys.readouterr().out
    assert "1 submission(s) have written answers" in out
    assert f"run `jupyter lab` in {course_dir} (add --allow-root as root) and open /formgrader" in out
    assert cli.main(["autograde", "--course-dir", str(course_dir), "--student", "left_blank"]) == 0  # kept: the ledger
    out = capsys.readouterr().out
    assert "written answer left blank: 0 / " in out and "(unchanged, kept)" in out
    assert "1 submission(s) left their written answers blank: they score 0 there" in out
