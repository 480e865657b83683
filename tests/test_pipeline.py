"""The whole path once: execute a solution, submit samples, autograde, export, feedback."""
import csv
import json
import subprocess
import tomllib

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader.dbutil import _temp_alembic_ini
from sqlalchemy import create_engine, text

from grader import cli, course, database
from grader.checking import registry
from grader.course import ASSIGNMENTS_DIR
from grader.coursedir import CourseDir
from grader.sample_submissions import sample_answers
from submissions import interpreter_env
from utils import claims
from utils import records as records_module
from utils.present import Result
from utils.execute import check_records, measured_tips


def _groups(rows):
    groups = {}
    for row in rows:
        groups.setdefault(row.comparison, []).append(row)
    return groups

AID = "03_building_models"
def expected_scores() -> dict[str, dict[str, int]]:
    """Total score of every bundled sample (grader/assignments/<id>/scores.toml): correct answers in any
    style get full marks, the wrong ones lose exactly the points of the behaviour they get wrong."""
    return {a.id: tomllib.loads((ASSIGNMENTS_DIR / a.id / "scores.toml").read_text()) for a in course.assignments()}


def points(assignment_id):
    nb = nbformat.read(course.find(assignment_id).source_dir / f"{assignment_id}.ipynb", as_version=4)
    return {c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader["points"]
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


@pytest.fixture(scope="module")
def graded(graded_course):
    """The session's graded batch (every bundled sample, a stray folder, an empty one, the cheats)."""
    return graded_course.dir, graded_course.outcomes, graded_course.lines


@pytest.mark.parametrize("assignment_id", [a.id for a in course.assignments()])
def test_solution_executes_in_quick_mode_and_records_measurements(assignment_id, quick_runs):
    run, records, out = quick_runs[assignment_id]
    source = course.find(assignment_id).source_dir / f"{assignment_id}.ipynb"
    assert run.ok, run.error
    assert (out / "executed" / f"{assignment_id}.html").is_file()
    assert check_records([source], records, "cpu") == []  # every tip it promises to measure, on the CPU
    rows = [json.loads(line) for line in records.read_text().splitlines()] if records.exists() else []
    assert {r["notebook"] for r in rows} == {assignment_id}
    assert all(r["median_s"] > 0 and r["quick"] and r["device"] == "cpu" and len(r["round_medians"]) == 2
               for r in rows)
    comparisons = [Result.from_records(g) for g in _groups(records_module.load(records)).values()]
    for claim in claims.load():  # every claim a CPU run can test finds its comparison row
        if claim.measure and claim.device != "gpu" and claim.measure["tip"] in measured_tips(source, "cpu"):
            assert claims.find_row(claim, comparisons), f"{claim.id}: {claim.measure} was not recorded"
    executed = nbformat.read(out / "executed" / f"{assignment_id}.ipynb", as_version=4)
    stderr = [o.text for c in executed.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, f"warnings or errors on stderr: {stderr}"


def test_every_assignment_has_checks_and_samples():
    assert set(registry()) == {a.id for a in course.assignments()}
    for assignment_id, expected in expected_scores().items():
        assert set(sample_answers(course.find(assignment_id))) == set(expected)
        written = set(course.manual_cells(nbformat.read(course.find(assignment_id).source_dir
                                                         / f"{assignment_id}.ipynb", as_version=4)))
        assert set(registry()[assignment_id].tests) == set(points(assignment_id)) - written


def test_samples_score_as_expected(graded):
    course_dir, outcomes, _ = graded
    # The batch grades one "correct" sample; the others are the reference solutions the grader
    # checked (and cached as passed) before the batch: the same notebooks, graded the same way.
    passed = json.loads((course_dir / ".grader" / "references" / "passed.json").read_text())
    assert set(passed) == set(expected_scores())
    for assignment_id, expected in expected_scores().items():
        full = sum(points(assignment_id).values())
        # a passed reference has every automatic check in full (written answers wait for the instructor)
        assert expected["correct"] == sum(points(assignment_id)[test] for test in registry()[assignment_id].tests)
        for sample, score in expected.items():
            if sample == "correct" and assignment_id != AID:
                continue
            outcome = outcomes[(f"sample_{sample}", assignment_id)]
            assert outcome.error is None and outcome.max_score == full, outcome.line()
            assert outcome.score == score, outcome.line()


def test_wrong_and_broken_answers_lose_points(graded):
    course_dir, outcomes, _ = graded
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        def score(student, grade_id):
            return gb.find_grade(grade_id, AID, AID, student).score
        deep_mlp_tests = [g for g in points(AID) if "deep_mlp" in g]
        assert deep_mlp_tests
        for grade_id in deep_mlp_tests:  # the plain-list model fails every DeepMLP check
            assert score("sample_plain_list", grade_id) == 0
        assert outcomes[("sample_plain_list", AID)].score < outcomes[("sample_plain_list", AID)].max_score
        assert outcomes[("sample_broken", AID)].score == 0


def test_unusable_folders_are_reported_and_the_batch_goes_on(graded):
    _, outcomes, lines = graded
    assert "not an assignment" in outcomes[("stray", "99_not_an_assignment")].error
    empty = outcomes[("empty_handed", AID)]
    assert empty.error is None and empty.score == 0 and f"expected {AID}.ipynb" in empty.note
    assert any(line.startswith("[") and "sample_correct" in line for line in lines)


def test_feedback_notebook_holds_verdicts_not_hidden_checks(graded):
    course_dir, _, _ = graded
    nb = nbformat.read(course_dir / "autograded" / "sample_plain_list" / AID / f"{AID}.ipynb", as_version=4)
    outputs = [o.text for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") for o in c.outputs]
    assert any("not passed" in text and "registered" in text for text in outputs)
    text = nbformat.writes(nb)
    assert "BEGIN HIDDEN TESTS" not in text and "CONFIGS" not in text


def test_export_writes_nbgrader_csv(graded, tmp_path):
    course_dir, outcomes, _ = graded
    out = tmp_path / "grades.csv"
    assert cli.main(["export", "--course-dir", str(course_dir), "--to", str(out)]) == 0
    rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(out.open())}
    for key, outcome in outcomes.items():
        if outcome.error is None:
            assert float(rows[key]["score"]) == outcome.score
            assert float(rows[key]["max_score"]) == outcome.max_score


def test_export_of_one_assignment_names_who_submitted_nothing(graded, tmp_path, capsys):
    course_dir, outcomes, _ = graded
    out = tmp_path / "one.csv"
    assert cli.main(["export", "--course-dir", str(course_dir), "--to", str(out), "--assignment", AID]) == 0
    rows = list(csv.DictReader(out.open()))
    assert {r["assignment"] for r in rows} == {AID}
    graded_here = {student for (student, assignment), o in outcomes.items() if assignment == AID and o.error is None}
    nothing = [r["student_id"] for r in rows if r["student_id"] not in graded_here]  # other assignments' samples
    assert nothing and all(float(r["score"]) == 0 for r in rows if r["student_id"] in nothing)
    printed = capsys.readouterr().out
    assert f"{len(nothing)} row(s) score 0.0 because nothing was submitted, not a graded zero: {nothing[0]}/{AID}" \
        in printed
    assert cli.main(["export", "--course-dir", str(course_dir), "--to", str(out), "--assignment", "nope"]) == 2
    assert "no assignment nope in the gradebook; it has: 00_measure_first, " in capsys.readouterr().err


def test_feedback_pages_for_every_graded_student(graded, feedback_pages, capsys):
    course_dir, outcomes, _ = graded
    for (student, assignment), outcome in outcomes.items():
        if outcome.error is None and assignment == AID:
            assert course_dir / "feedback" / student / assignment / f"{assignment}.html" in feedback_pages
    assert {page.parent.name for page in feedback_pages} == {AID}  # --assignment: that assignment's pages alone
    assert cli.main(["feedback", "--course-dir", str(course_dir), "--student", "nobody"]) == 2
    assert "no autograded submission" in capsys.readouterr().err


def test_cli_exit_codes(graded, capsys, tmp_path):
    course_dir, _, _ = graded
    assert cli.main(["autograde", "--course-dir", str(course_dir), "--student", "empty_handed"]) == 0
    assert cli.main(["autograde", "--course-dir", str(course_dir), "--student", "stray"]) == 1
    assert cli.main(["autograde", "--course-dir", str(course_dir), "--student", "nobody"]) == 2
    assert cli.main(["autograde", "--course-dir", str(tmp_path)]) == 2
    assert "submitted" in capsys.readouterr().err
    assert cli.main(["autograde", "--course-dir", str(course_dir), "--assignment", "nope"]) == 2
    assert cli.main(["export", "--course-dir", str(tmp_path), "--to", str(tmp_path / "x.csv")]) == 2
    assert cli.main(["autograde", "--course-dir", str(course_dir), "--workers", "0"]) == 2


def test_assignments_lists_ids_and_release_paths(capsys):
    assert cli.main(["assignments"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"{AID}\tnotebooks/{AID}/{AID}.ipynb" in lines


def test_a_new_gradebook_is_stamped_with_nbgraders_migration_head_without_a_subprocess(tmp_path, monkeypatch):
    """nbgrader learns the head by running `alembic heads`; the grader reads it in-process. The stamp
    must be the one nbgrader's own command gives, or nbgrader would try to migrate the gradebook."""
    with _temp_alembic_ini(f"sqlite:///{tmp_path / 'unused.db'}") as ini:
        heads = subprocess.run(["alembic", "-c", ini, "heads"], env=interpreter_env(), capture_output=True,
                               text=True, check=True).stdout
    assert database.alembic_head() == heads.split()[0]

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"a subprocess was started: {args}")

    monkeypatch.setattr(subprocess, "check_output", no_subprocess)
    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    with database.gradebook(CourseDir(tmp_path)) as gb:
        gb.add_student("s1")
    with create_engine(f"sqlite:///{tmp_path / database.SQLITE_FILE}").connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == heads.split()[0]
