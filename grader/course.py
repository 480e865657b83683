"""The course as nbgrader sees it: assignments in the repo, and course directories built from them.

Each assignment is one notebook: ``solutions/<id>/<id>.ipynb`` is the nbgrader source and
``notebooks/<id>/<id>.ipynb`` the released version that ``generate`` writes. A grading course
directory (``--course-dir``) gets a fresh copy of the source and nbgrader's own
``generate_assignment`` fills its gradebook, so grading never trusts student files for the
notebook's structure.
"""
from __future__ import annotations

import filecmp
import logging
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from utils.paths import NOTEBOOKS, SOLUTIONS

from . import database
from .coursedir import CourseDir, CourseDirLike
from .errors import CourseError
from .formgrader import CONFIG

COURSE_ID = "default_course"  # the course row nbgrader's Gradebook creates; the exchange files assignments under it
IGNORED = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc")
# One folder per assignment, named by its id: checks.py, probes.py, scores.toml, samples/<sample>/
ASSIGNMENTS_DIR = Path(__file__).resolve().parent / "assignments"


@dataclass(frozen=True)
class Assignment:
    id: str

    @property
    def source_dir(self) -> Path:
        return SOLUTIONS / self.id

    @property
    def notebook_name(self) -> str:
        return f"{self.id}.ipynb"

    @property
    def release_path(self) -> Path:
        return NOTEBOOKS / self.id / self.notebook_name

    @property
    def grader_dir(self) -> Path:
        """The grader's folder for this assignment: its checks, probes and sample submissions."""
        return ASSIGNMENTS_DIR / self.id


MEASUREMENT_TAG = "measurement"  # an answer code cell the learner's own measurement goes in: kept, never run


def answer_cells(nb) -> dict[str, str]:
    """grade_id -> source of every answer (solution, not graded) code cell of a trusted notebook."""
    cells = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution") and not meta.get("grade"):
            cells[meta["grade_id"]] = cell.source
    return cells


def measurement_cells(nb) -> set[str]:
    """Answer code cells tagged ``measurement``: the grader keeps them for the instructor to read
    next to the written answer, and does not run them (a timing proves nothing in a sandbox)."""
    return {cell.metadata["nbgrader"]["grade_id"] for cell in nb.cells
            if MEASUREMENT_TAG in cell.metadata.get("tags", []) and cell.metadata.get("nbgrader", {}).get("solution")}


def manual_cells(nb) -> dict[str, str]:
    """grade_id -> source of every manually graded answer (solution AND graded: nbgrader's
    "manually graded answer", a written interpretation): points the instructor gives in formgrader."""
    cells = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade"):
            cells[meta["grade_id"]] = cell.source
    return cells


def assignments() -> list[Assignment]:
    """Every assignment in solutions/, in course order."""
    found = []
    for folder in sorted(p for p in SOLUTIONS.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not (folder / f"{folder.name}.ipynb").is_file():
            raise CourseError(f"{folder} must hold exactly the notebook {folder.name}.ipynb")
        found.append(Assignment(folder.name))
    return found


def find(assignment_id: str) -> Assignment:
    known = {a.id: a for a in assignments()}
    if assignment_id not in known:
        raise CourseError(f"unknown assignment {assignment_id!r}; known: {', '.join(known) or 'none'}")
    return known[assignment_id]


def nbgrader_config(course_dir: CourseDirLike, **overrides):
    """A traitlets Config for nbgrader with the course folder as its root and the course's gradebook
    (default: the SQLite file in the folder)."""
    from traitlets.config import Config

    course_dir = CourseDir.of(course_dir)
    config = Config()
    config.CourseDirectory.root = str(course_dir.path)
    config.CourseDirectory.db_url = database.url(course_dir)
    # nbgrader's own default is '': generate_assignment then adds assignments of no course, which a
    # PostgreSQL gradebook refuses (a foreign key; SQLite does not check them). This is the course
    # row nbgrader's Gradebook creates by default.
    config.CourseDirectory.course_id = COURSE_ID
    config.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", ".grader"]
    config.Exchange.root = str(course_dir.path / "exchange")  # as in the written nbgrader_config.py
    for dotted, value in overrides.items():
        section, name = dotted.split(".")
        setattr(getattr(config, section), name, value)
    return config


def nbgrader_api(course_dir: CourseDirLike, **overrides):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    _put_interpreter_bin_on_path()
    database.stamp_in_process()
    config = nbgrader_config(course_dir, **overrides)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    api.log.setLevel(logging.WARNING)
    return api


def _put_interpreter_bin_on_path() -> None:
    """nbgrader runs the ``alembic`` executable by name; make the venv's copy findable."""
    bin_dir = os.path.dirname(sys.executable)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def prepare(course_dir: CourseDirLike, assignment: Assignment) -> None:
    """Put the repo's source of ``assignment`` into the course folder and (re)generate it there, and
    in the course's gradebook.

    Generation runs only when the source changed, because nbgrader refuses to drop grade
    cells that already have submissions. Graders sharing a PostgreSQL gradebook take turns.
    """
    course_dir = CourseDir.of(course_dir)
    course_dir.path.mkdir(parents=True, exist_ok=True)
    _write_default_config(course_dir.path)
    target = course_dir.path / "source" / assignment.id
    released = course_dir.path / "release" / assignment.id / assignment.notebook_name
    with database.exclusive(course_dir):
        if _same_tree(assignment.source_dir, target) and released.exists() and _in_gradebook(course_dir, assignment):
            return
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(assignment.source_dir, target, ignore=IGNORED)
        result = nbgrader_api(course_dir).generate_assignment(assignment.id, force=True, create=True)
    if not result["success"]:
        raise CourseError(f"nbgrader generate_assignment failed for {assignment.id}:\n{result.get('error') or result.get('log')}")


def _in_gradebook(course_dir: CourseDir, assignment: Assignment) -> bool:
    from nbgrader.api import Gradebook, MissingEntry

    if not database.exists(course_dir):
        return False
    with Gradebook(database.url(course_dir)) as gb:
        try:
            gb.find_assignment(assignment.id)
        except MissingEntry:
            return False
    return True


def _write_default_config(root: Path) -> None:
    """So that plain ``nbgrader`` commands and formgrader run in the course dir see the same gradebook,
    an exchange directory the instructor owns, and route "Autograde" to the course grader. An
    existing file is never overwritten (the instructor may have added settings to it)."""
    (root / "exchange").mkdir(exist_ok=True)
    path = root / "nbgrader_config.py"
    if not path.exists():
        path.write_text(
            "# Written by `python -m grader`: the gradebook it fills lives next to this file. Add your own\n"
            "# settings below (e.g. FileNameCollectorPlugin.named_regexp); the grader never rewrites this file.\n"
            "import os\n\n"
            "c = get_config()  # noqa: F821\n"
            "c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))\n"
            f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
            "c.Exchange.root = os.path.join(c.CourseDirectory.root, 'exchange')  # release, collect, feedback\n"
            "if os.environ.get('GRADER_DB_URL'):  # a shared gradebook (--db-url): never stored here\n"
            "    c.CourseDirectory.db_url = os.environ['GRADER_DB_URL']\n" + CONFIG
        )


def _same_tree(a: Path, b: Path) -> bool:
    if not b.exists():
        return False
    cmp = filecmp.dircmp(a, b, ignore=[".ipynb_checkpoints", "__pycache__"])
    return _dircmp_equal(cmp)


def _dircmp_equal(cmp: filecmp.dircmp) -> bool:
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(_dircmp_equal(sub) for sub in cmp.subdirs.values())


def generate_release(out_dir: Path = NOTEBOOKS) -> list[Path]:
    """Regenerate every released notebook from solutions/ into ``out_dir`` (``make notebooks``)."""
    written = []
    with tempfile.TemporaryDirectory(prefix="course-generate-") as tmp:
        for assignment in assignments():
            prepare(Path(tmp), assignment)
            release = Path(tmp) / "release" / assignment.id
            target = out_dir / assignment.id
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(release, target, ignore=IGNORED)
            written.append(target / assignment.notebook_name)
    stale = [p for p in out_dir.iterdir() if p.is_dir() and p.name not in {a.id for a in assignments()}] \
        if out_dir.exists() else []
    for folder in stale:  # an assignment removed from solutions/ leaves no orphan behind
        shutil.rmtree(folder)
    return written
