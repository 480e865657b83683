"""The one writer of grades: nbgrader's gradebook, plus the autograded notebook feedback reads.

Only the main grading process calls this, one submission at a time, so the SQLite gradebook
never sees concurrent writers; a PostgreSQL gradebook (``--db-url``) may have several, one per
shard. Scores go through nbgrader's own API, which keeps formgrader, ``nbgrader export`` and
``nbgrader generate_feedback`` working as usual.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
from nbformat.v4 import new_output

from . import database
from .course import Assignment, answer_cells, manual_cells
from .coursedir import CourseDir, CourseDirLike
from .grading import Result, source_cells


def recorded(course_dir: CourseDirLike) -> dict[tuple[str, str], list]:
    """(assignment, student) -> the automatic scores the gradebook holds for that submission,
    ``[[grade cell, score], ...]``. The ledger keeps the same list, so a score changed by anything
    but this grader (nbgrader's own autograde, a script) gets that submission graded again."""
    with database.gradebook(CourseDir.of(course_dir)) as gb:
        return _auto_scores(gb)


def _auto_scores(gb, only: tuple[str, str] | None = None) -> dict:
    from nbgrader.api import Assignment as Assigned
    from nbgrader.api import Grade, GradeCell, SubmittedAssignment, SubmittedNotebook

    query = (gb.db.query(Assigned.name, SubmittedAssignment.student_id, GradeCell.name, Grade.auto_score)
             .join(SubmittedAssignment, SubmittedAssignment.assignment_id == Assigned.id)
             .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
             .join(Grade, Grade.notebook_id == SubmittedNotebook.id)
             .join(GradeCell, GradeCell.id == Grade.cell_id))
    if only is not None:
        query = query.filter(Assigned.name == only[0], SubmittedAssignment.student_id == only[1])
    found = {}
    for assignment, student, cell, score in query.order_by(GradeCell.name):
        found.setdefault((assignment, student), []).append([cell, score])
    return found


RECORD_ATTEMPTS = 3
EXCHANGE_FILES = ("timestamp.txt", "submission_secret.txt")  # what `nbgrader collect` puts next to a submission


def record(course_dir: CourseDir, assignment: Assignment, result: Result, timestamp: str | None,
           unanswered: set[str]) -> tuple[float, float, float, float, list]:
    """Store one submission's scores; returns (score, max_score, points left to the instructor,
    points of written answers left blank) as the gradebook computes them, and its automatic scores
    as ``recorded`` lists them. Written answers are nbgrader's manually graded answers: like
    ``nbgrader autograde``, an answer left as released scores 0 (blank), any other waits for a human.

    Two graders sharing a gradebook may create the same student or submission at once: nbgrader
    then refuses the second insert (rolled back, InvalidEntry) and the next attempt finds the row."""
    from nbgrader.api import InvalidEntry

    for attempt in range(1, RECORD_ATTEMPTS + 1):
        try:
            return _record_once(course_dir, assignment, result, timestamp, unanswered)
        except InvalidEntry:
            if attempt == RECORD_ATTEMPTS:
                raise


def _record_once(course_dir: CourseDir, assignment: Assignment, result: Result, timestamp: str | None,
                 unanswered: set[str]) -> tuple[float, float, float, float, list]:
    from nbgrader.api import MissingEntry
    from nbgrader.utils import parse_utc

    notebook_id = assignment.id
    with database.gradebook(course_dir) as gb:
        gb.update_or_create_student(result.student)
        try:
            submission = gb.find_submission(assignment.id, result.student)
            if timestamp:  # the column takes a datetime (add_submission parses the text itself)
                submission.timestamp = parse_utc(timestamp)
        except MissingEntry:
            submission = gb.add_submission(assignment.id, result.student, **({"timestamp": timestamp} if timestamp else {}))
        for grade_id, (fraction, _) in result.verdicts.items():
            grade = gb.find_grade(grade_id, notebook_id, assignment.id, result.student)
            grade.auto_score = fraction * grade.max_score
            grade.needs_manual_grade = grade.manual_score is not None  # a human's score is never overwritten
        pending = blank = 0.0
        for grade_id in source_cells(assignment.id).written:
            grade = gb.find_grade(grade_id, notebook_id, assignment.id, result.student)
            grade.auto_score = 0.0 if grade_id in unanswered else None
            grade.needs_manual_grade = grade.auto_score is None and grade.manual_score is None
            pending += grade.max_score if grade.needs_manual_grade else 0.0
            blank += grade.max_score if grade.auto_score == 0.0 and grade.manual_score is None else 0.0
        for comment in gb.find_submission_notebook(notebook_id, assignment.id, result.student).comments:
            comment.auto_comment = "No response." if comment.name in unanswered else None
        gb.db.commit()
        submission = gb.find_submission(assignment.id, result.student)
        key = (assignment.id, result.student)
        return (float(submission.score), float(submission.max_score), pending, blank,
                _auto_scores(gb, key).get(key, []))


def replace_file(path: Path, write) -> None:
    """``write(tmp)`` a new file beside ``path``, then put it in its place: a kill leaves the old file
    or the new one, never half of one, and a read-only file (nbgrader's own autograde leaves them so)
    is replaced where only root could overwrite it."""
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)


def write_autograded(root: Path, assignment: Assignment, result: Result, submitted: Path) -> Path:
    """The notebook nbgrader's feedback and formgrader render: a summary of the verdicts first, then
    the exercises of the released notebook (no hidden checks in it) with the student's answers and
    each test cell's verdict as its output. Every cell nbgrader tracks (answer, test and locked
    cells, metadata intact) is kept; the lesson before the exercises is left out (the released
    notebook has it), so the page leads with what the student did."""
    release = root / "release" / assignment.id / assignment.notebook_name
    nb = nbformat.read(release, as_version=4)
    points: dict[str, float] = {}  # grade id -> points, in the notebook's order
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if meta.get("grade"):
            points[grade_id] = float(meta.get("points", 0))
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
    nb.cells = [nbformat.v4.new_markdown_cell(_summary(assignment, result, points)), *_exercises(nb.cells)]
    target = root / "autograded" / result.student / assignment.id
    target.mkdir(parents=True, exist_ok=True)
    replace_file(target / assignment.notebook_name, lambda tmp: nbformat.write(nb, tmp))
    for name in EXCHANGE_FILES:  # nbgrader's feedback and release_feedback file the feedback under these
        if (submitted / name).is_file():
            replace_file(target / name, lambda tmp: shutil.copyfile(submitted / name, tmp))
    return target / assignment.notebook_name


def _exercises(cells: list) -> list:
    """Every cell nbgrader tracks, and the section holding the exercises: from the top-level
    heading (# or ##) before the first answer cell to the last tracked cell."""
    tracked = {i for i, c in enumerate(cells) if c.metadata.get("nbgrader")}
    answers = sorted(i for i in tracked if cells[i].metadata.nbgrader.get("solution"))
    if not answers:
        return cells
    start = next((i for i in range(answers[0], -1, -1) if cells[i].cell_type == "markdown"
                  and cells[i].source.lstrip().startswith(("# ", "## "))), answers[0])
    return [c for i, c in enumerate(cells) if start <= i <= max(tracked) or i in tracked]


_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#|$~!{}"})  # shown as typed, never as markup


def _summary(assignment: Assignment, result: Result, points: dict[str, float]) -> str:
    """Markdown: every graded test with its points and verdict, the written answers, the notes."""
    written = set(source_cells(assignment.id).written)
    earned = sum(result.verdicts[t][0] * p for t, p in points.items() if t in result.verdicts)
    graded = sum(p for t, p in points.items() if t in result.verdicts)
    lines = [f"# Feedback: {assignment.id}", "", f"**Graded by the autograder: {earned:g} / {graded:g} points**"
             + (" (the written answers are graded by your instructor)" if written else ""), ""]
    for test, available in points.items():
        if test in written:
            lines.append(f"- `{test}` (up to {available:g} point(s)): a written answer, graded by your instructor")
        elif test in result.verdicts:
            fraction, message = result.verdicts[test]
            verdict = "**passed**" if fraction >= 1 else f"**not passed**: {_plain(message)}"
            lines.append(f"- `{test}` ({fraction * available:g} / {available:g} point(s)): {verdict}")
    notes = ([result.unreadable] if result.unreadable else []) + result.notes
    if notes:
        lines += ["", "**Grader notes**", "", *(f"- {_plain(n)}" for n in notes)]
    lines += ["", "Below: each exercise with your answer and its tests, each test's verdict as its output. "
              "The lesson itself is in the released notebook."]
    return "\n".join(lines)


def _plain(text: str, limit: int = 600) -> str:
    text = " ".join(str(text).split())
    return (text[:limit] + (" ..." if len(text) > limit else "")).translate(_MARKDOWN)


def unanswered(root: Path, assignment: Assignment, result: Result) -> set[str]:
    """Answer cells left missing or exactly as released (the stub)."""
    release = nbformat.read(root / "release" / assignment.id / assignment.notebook_name, as_version=4)
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
