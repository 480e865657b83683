"""Grade every submission in a course directory with nbgrader, several at a time.

Submissions are read from ``DIR/submitted/<student>/<assignment>/<assignment>.ipynb`` and never
modified: each is copied to a staging area (``DIR/.grader/staged``) with only the notebook and
its timestamp, switched to QUICK mode through papermill's parameter injection (grading needs
the answers, not long timing demos), and graded there by ``nbgrader autograde``, which writes
the scores into the course's gradebook.
"""
from __future__ import annotations

import multiprocessing
import os
import shutil
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat

from . import course
from .course import Assignment, CourseError

STAGED = os.path.join(".grader", "staged")
CELL_TIMEOUT_S = 300


@dataclass(frozen=True)
class Submission:
    student: str
    assignment: Assignment
    folder: Path


@dataclass
class Outcome:
    student: str
    assignment: str
    score: float | None = None
    max_score: float | None = None
    error: str | None = None

    def line(self) -> str:
        if self.error:
            return f"{self.student} {self.assignment}: NOT GRADED: {self.error}"
        return f"{self.student} {self.assignment}: {self.score:g} / {self.max_score:g}"


def discover(course_dir: Path, assignment_id: str | None = None,
             student_id: str | None = None) -> tuple[list[Submission], list[Outcome]]:
    """Submissions to grade, plus outcomes for folders that cannot be graded (unknown assignment)."""
    submitted = course_dir / "submitted"
    if not submitted.is_dir():
        raise CourseError(f"{submitted} does not exist: expected submitted/<student>/<assignment>/<notebook>.ipynb")
    known = {a.id: a for a in course.assignments()}
    if assignment_id is not None and assignment_id not in known:
        raise CourseError(f"unknown assignment {assignment_id!r}; known: {', '.join(known)}")
    found, problems = [], []
    for student_dir in sorted(p for p in submitted.iterdir() if p.is_dir()):
        if student_id is not None and student_dir.name != student_id:
            continue
        for folder in sorted(p for p in student_dir.iterdir() if p.is_dir()):
            if assignment_id is not None and folder.name != assignment_id:
                continue
            if folder.name not in known:
                problems.append(Outcome(student_dir.name, folder.name, error="not an assignment of this course"))
                continue
            found.append(Submission(student_dir.name, known[folder.name], folder))
    return found, problems


def _stage(course_dir: Path, sub: Submission) -> None:
    """Copy the notebook (and timestamp) into the staging area, parameterised for QUICK mode."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    source = sub.folder / sub.assignment.notebook_name
    if not source.is_file():
        present = ", ".join(sorted(p.name for p in sub.folder.iterdir())) or "nothing"
        raise CourseError(f"expected {sub.assignment.notebook_name}, found {present}")
    try:
        nb = load_notebook_node(str(source))  # nbformat.read plus the metadata papermill needs
    except Exception as exc:  # nbformat raises several types for unreadable files
        raise CourseError(f"{source.name} is not a readable notebook: {exc}") from exc
    staged = course_dir / STAGED / sub.student / sub.assignment.id
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    nbformat.write(parameterize_notebook(nb, {"QUICK": True}), staged / sub.assignment.notebook_name)
    if (sub.folder / "timestamp.txt").is_file():
        shutil.copy(sub.folder / "timestamp.txt", staged / "timestamp.txt")


def _grade_one(course_dir: Path, student: str, assignment_id: str) -> Outcome:
    """Runs in a worker process: nbgrader autograde on one staged submission, score from the gradebook."""
    import warnings

    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader 0.9 vs SQLAlchemy 2.x session notices
    os.environ["COURSE_RECORDS"] = ""  # grading runs must not append to the course's measurements
    api = course.nbgrader_api(course_dir, **{"CourseDirectory.submitted_directory": STAGED,
                                             "Execute.timeout": CELL_TIMEOUT_S})
    result = api.autograde(assignment_id, student, force=True, create=True)
    if not result["success"]:
        detail = (result.get("error") or result.get("log") or "unknown error").strip().splitlines()
        return Outcome(student, assignment_id, error="nbgrader autograde failed: " + " | ".join(detail[-3:]))
    with Gradebook(api.coursedir.db_url) as gb:
        sub = gb.find_submission(assignment_id, student)
        return Outcome(student, assignment_id, float(sub.score), float(sub.max_score))


def autograde(course_dir: Path, assignment_id: str | None = None, student_id: str | None = None,
              workers: int | None = None, report: Callable[[str], None] = print) -> list[Outcome]:
    """Grade the matching submissions; one broken submission never stops the batch."""
    course_dir = course_dir.resolve()
    subs, outcomes = discover(course_dir, assignment_id, student_id)
    for assignment in {s.assignment for s in subs}:
        course.prepare(course_dir, assignment)
    runnable = []
    for sub in subs:
        try:
            _stage(course_dir, sub)
            runnable.append(sub)
        except CourseError as exc:
            outcomes.append(Outcome(sub.student, sub.assignment.id, error=str(exc)))
    for outcome in outcomes:
        report(outcome.line())
    workers = max(1, workers or os.cpu_count() or 1)
    report(f"grading {len(runnable)} submission(s) with {workers} worker(s)")
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(_grade_one, course_dir, s.student, s.assignment.id): s for s in runnable}
        for done, future in enumerate(as_completed(futures), start=1):
            sub = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:  # a crashed worker is one student's problem, not the batch's
                outcome = Outcome(sub.student, sub.assignment.id, error=f"grader crashed: {exc!r}")
            outcomes.append(outcome)
            report(f"[{done}/{len(runnable)}] {outcome.line()}")
    return outcomes
