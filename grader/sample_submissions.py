"""Sample submissions built from the released notebook plus answer code.

``grader/assignments/<assignment>/samples/<sample>/<grade_id>.py`` holds the code a sample
student put in the answer cell with that grade id. The ``correct`` sample is taken from the
source notebook's own solutions, so it never drifts from them.
"""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from utils import records
from utils.comparison import group_records

from . import database
from .course import Assignment, answer_cells
from .coursedir import CourseDir
from .errors import CourseError

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def solution_answers(assignment: Assignment) -> dict[str, str]:
    """grade_id -> the source's solution code for every answer cell, markers removed."""
    nb = nbformat.read(assignment.source_dir / assignment.notebook_name, as_version=4)
    return {grade_id: "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN, END)).strip() + "\n"
            for grade_id, source in answer_cells(nb).items()}


def fill(release_nb: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    """A copy of the released notebook with the given answer cells filled in."""
    nb = copy.deepcopy(release_nb)
    ids = {_nbgrader(c).get("grade_id") for c in nb.cells if _nbgrader(c).get("solution")}
    unknown = set(answers) - ids
    if unknown:
        raise CourseError(f"no answer cell with grade id {', '.join(sorted(unknown))}")
    for cell in nb.cells:
        grade_id = _nbgrader(cell).get("grade_id")
        if _nbgrader(cell).get("solution") and grade_id in answers:
            cell.source = answers[grade_id]
    return nb


def sample_answers(assignment: Assignment) -> dict[str, dict[str, str]]:
    """sample name -> answers, for the bundled samples of one assignment."""
    samples = {"correct": solution_answers(assignment)}
    folder = assignment.grader_dir / "samples"
    if folder.is_dir():
        for sample in sorted(p for p in folder.iterdir() if p.is_dir()):
            samples[sample.name] = {f.stem: f.read_text(encoding="utf-8") for f in sorted(sample.glob("*.py"))}
    return samples


def carry(nb: nbformat.NotebookNode, measured: list[records.Record]) -> nbformat.NotebookNode:
    """The notebook as if its cards had shown these records: each comparison's records as a display
    output (``records.bundle``, what a card's ``_repr_mimebundle_`` gives) on the first lesson code cell."""
    cell = next((c for c in nb.cells if c.cell_type == "code" and not _nbgrader(c)), None)
    if cell is None or not measured:
        return nb
    cell.outputs = [*cell.get("outputs", []), *(nbformat.v4.new_output("display_data", data=records.bundle(group))
                                                for group in group_records(measured))]
    return nb


def load_runs(paths: list[Path]) -> list[list[records.Record]]:
    """The records of each run (a folder holding measurements.jsonl, or the file itself)."""
    runs = []
    for path in map(Path, paths):
        jsonl = path / "measurements.jsonl" if path.is_dir() else path
        if not jsonl.is_file():
            raise CourseError(f"{jsonl}: no measurement records there")
        runs.append(records.load(jsonl))
    return runs


def _submit(root: Path, student: str, assignment: Assignment, nb: nbformat.NotebookNode) -> str:
    """``nb`` as ``student``'s submission, where nbgrader's exchange puts it; returns the student id."""
    target = root / "submitted" / student / assignment.id
    target.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target / assignment.notebook_name)
    return student


def write_samples(root: Path, assignment: Assignment, release_dir: Path,
                  runs: list[list[records.Record]] = ()) -> list[str]:
    """Write every sample as ``submitted/sample_<name>/<assignment>/<notebook>``; returns student ids.
    With ``runs`` (each a run's records), sample i carries run i modulo their number's records of
    this notebook in its outputs, as if that run's device had run it (``carry``)."""
    release_nb = nbformat.read(release_dir / assignment.notebook_name, as_version=4)
    students = []
    for i, (name, answers) in enumerate(sample_answers(assignment).items()):
        nb = fill(release_nb, answers)
        if runs:
            nb = carry(nb, [r for r in runs[i % len(runs)] if r.notebook == assignment.id])
        students.append(_submit(root, f"sample_{name}", assignment, nb))
    return students


def write_class(root: Path, assignment: Assignment, release_dir: Path, n: int,
                prefix: str = "s") -> dict[str, str]:
    """A made-up class: ``n`` submissions cycling through the bundled samples (honest, wrong, broken),
    written as ``submitted/<prefix><i>_<sample>/<assignment>/``; returns student id -> sample name."""
    if n < 0:
        raise CourseError(f"a class needs a number of submissions >= 0, got {n}")
    release_nb = nbformat.read(release_dir / assignment.notebook_name, as_version=4)
    samples = sorted(sample_answers(assignment).items())
    students = {}
    for i in range(n):
        name, answers = samples[i % len(samples)]
        students[_submit(root, f"{prefix}{i:03d}_{name}", assignment, fill(release_nb, answers))] = name
    return students


# The demo class (``make run``): the four exercises the design card names, each with one of its
# wrong samples, and four students who each hand in a correct, a wrong, a broken and an
# other-style answer, in turn.
DEMO = {"02_tensor_toolbox": {"wrong": "loops", "other": "einsum_style"},       # sample for each kind
        "03_building_models": {"wrong": "plain_list", "other": "modulelist_style"},
        "04_training_loop": {"wrong": "keeps_graphs", "other": "other_style"},
        "05_memory": {"wrong": "no_collect", "other": "other_style"}}
DEMO_STUDENTS = ("alex", "bea", "chidi", "dana")
DEMO_KINDS = ("correct", "wrong", "broken", "other")


def write_demo(root: Path, assignment: Assignment, release_dir: Path,
               runs: list[list[records.Record]] = ()) -> dict[str, str]:
    """The demo class's submissions of ``assignment`` (one of ``DEMO``); returns student id ->
    sample name. "broken" is the bundled broken sample, or, where there is none, the released
    notebook handed in unanswered. ``runs``: as for ``write_samples``, one per student in turn."""
    offset = list(DEMO).index(assignment.id)
    release_nb = nbformat.read(release_dir / assignment.notebook_name, as_version=4)
    samples = sample_answers(assignment)
    students = {}
    for i, student in enumerate(DEMO_STUDENTS):
        kind = DEMO_KINDS[(i + offset) % len(DEMO_KINDS)]
        name = DEMO[assignment.id].get(kind, kind)
        nb = fill(release_nb, samples[name]) if name in samples else release_nb
        if runs:
            nb = carry(nb, [r for r in runs[i % len(runs)] if r.notebook == assignment.id])
        students[_submit(root, student, assignment, nb)] = name if name in samples else "unanswered"
    return students


def enroll(course_dir: CourseDir, submissions: list[tuple[str, str]]) -> None:
    """Gradebook entries (no grades) for made-up submissions, (student, assignment) pairs, as
    autograde would make them: for the class report's tests and benchmark."""
    from nbgrader.api import Assignment as Assigned
    from nbgrader.api import Student, SubmittedAssignment

    with database.gradebook(course_dir) as gb:
        assigned = {a: Assigned(name=a) for a in sorted({a for _, a in submissions})}
        students = {s: Student(id=s) for s in sorted({s for s, _ in submissions})}
        gb.db.add_all([*assigned.values(), *students.values()])
        gb.db.add_all([SubmittedAssignment(assignment=assigned[a], student=students[s]) for s, a in submissions])
        gb.db.commit()
