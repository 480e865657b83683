"""The one writer of grades: nbgrader's gradebook, plus the autograded notebook feedback reads.

Only the main grading process calls this, one submission at a time, so the SQLite gradebook
never sees concurrent writers. Scores go through nbgrader's own API, which keeps formgrader,
``nbgrader export`` and ``nbgrader generate_feedback`` working as usual.
"""
from __future__ import annotations

import copy
import shutil
import warnings
from pathlib import Path

import nbformat
from nbformat.v4 import new_output

from .course import Assignment, answer_cells, manual_cells, nbgrader_config
from .grading import Result, source_cells


def _gradebook(course_dir: Path):
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader 0.9 vs SQLAlchemy 2.x session notices
    return Gradebook(nbgrader_config(course_dir).CourseDirectory.db_url)


def recorded(course_dir: Path) -> set[tuple[str, str]]:
    """(assignment, student) pairs that have a submission in the gradebook."""
    with _gradebook(course_dir) as gb:
        return {(a.name, s.student.id) for a in gb.assignments for s in a.submissions}


def record(course_dir: Path, assignment: Assignment, result: Result, timestamp: str | None,
           unanswered: set[str]) -> tuple[float, float, float]:
    """Store one submission's scores; returns (score, max_score, points left to the instructor) as
    the gradebook computes them. Written answers are nbgrader's manually graded answers: like
    ``nbgrader autograde``, an answer left as released scores 0, any other waits for a human."""
    from nbgrader.api import MissingEntry

    notebook_id = assignment.id
    with _gradebook(course_dir) as gb:
        gb.update_or_create_student(result.student)
        try:
            submission = gb.find_submission(assignment.id, result.student)
            if timestamp:
                submission.timestamp = timestamp
        except MissingEntry:
            submission = gb.add_submission(assignment.id, result.student, **({"timestamp": timestamp} if timestamp else {}))
        for grade_id, (fraction, _) in result.verdicts.items():
            grade = gb.find_grade(grade_id, notebook_id, assignment.id, result.student)
            grade.auto_score = fraction * grade.max_score
            grade.needs_manual_grade = grade.manual_score is not None  # a human's score is never overwritten
        pending = 0.0
        for grade_id in source_cells(assignment.id).written:
            grade = gb.find_grade(grade_id, notebook_id, assignment.id, result.student)
            grade.auto_score = 0.0 if grade_id in unanswered else None
            grade.needs_manual_grade = grade.auto_score is None and grade.manual_score is None
            pending += grade.max_score if grade.needs_manual_grade else 0.0
        for comment in gb.find_submission_notebook(notebook_id, assignment.id, result.student).comments:
            comment.auto_comment = "No response." if comment.name in unanswered else None
        gb.db.commit()
        submission = gb.find_submission(assignment.id, result.student)
        return float(submission.score), float(submission.max_score), pending


def write_autograded(course_dir: Path, assignment: Assignment, result: Result, submitted: Path) -> Path:
    """The notebook nbgrader's feedback renders: the released notebook (no hidden checks in it),
    the student's answers, and each test cell's verdict as its output."""
    release = course_dir / "release" / assignment.id / assignment.notebook_name
    nb = copy.deepcopy(nbformat.read(release, as_version=4))
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if meta.get("solution") and grade_id in result.answers:  # code, or a written answer for formgrader
            cell.source = result.answers[grade_id]
            if cell.cell_type == "code":
                ran = result.cells.get(grade_id, {})
                text = (ran.get("output") or "") + (f"\n{ran['error']}\n" if ran.get("error") else "")
                cell.outputs = [new_output("stream", name="stdout", text=text)] if text.strip() else []
        elif cell.cell_type == "code" and meta.get("grade") and grade_id in result.verdicts:
            fraction, message = result.verdicts[grade_id]
            verdict = "passed" if fraction >= 1 else f"not passed: {message}"
            cell.outputs = [new_output("stream", name="stdout", text=f"Grader: {verdict}\n")]
    if result.notes or result.unreadable:
        notes = ([result.unreadable] if result.unreadable else []) + result.notes
        nb.cells.insert(0, nbformat.v4.new_markdown_cell("**Grader notes**\n\n" + "\n".join(f"- {n}" for n in notes)))
    target = course_dir / "autograded" / result.student / assignment.id
    target.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target / assignment.notebook_name)
    if (submitted / "timestamp.txt").is_file():
        shutil.copy(submitted / "timestamp.txt", target / "timestamp.txt")
    return target / assignment.notebook_name


def unanswered(course_dir: Path, assignment: Assignment, result: Result) -> set[str]:
    """Answer cells left missing or exactly as released (the stub)."""
    release = nbformat.read(course_dir / "release" / assignment.id / assignment.notebook_name, as_version=4)
    stubs = {**answer_cells(release), **manual_cells(release)}
    return {g for g, stub in stubs.items() if result.answers.get(g, stub).strip() == stub.strip()}


def read_timestamp(submitted: Path) -> str | None:
    """nbgrader's timestamp.txt, if the submission has a readable one."""
    path = submitted / "timestamp.txt"
    if not path.is_file():
        return None
    try:
        from nbgrader.utils import parse_utc

        text = path.read_text(encoding="utf-8").strip()
        parse_utc(text)
        return text
    except Exception:
        return None
