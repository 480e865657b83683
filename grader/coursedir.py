"""One class's grading place: the nbgrader course folder and where its gradebook lives.

Names, throughout the grader: a ``CourseDir`` is ``course_dir``, and its folder ``course_dir.path``;
a helper that only reads or writes files in the folder takes that ``Path`` as ``root`` (nbgrader's
``CourseDirectory.root``). The public entry points take a ``CourseDirLike`` for callers' ease."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CourseDir:
    """The course folder (``--course-dir``) and its gradebook: nbgrader's SQLite file in the folder,
    or ``db_url`` (``--db-url``), a PostgreSQL database that several graders share."""
    path: Path
    db_url: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "path", Path(self.path))

    @classmethod
    def of(cls, course_dir: CourseDirLike) -> CourseDir:
        """A CourseDir as given, or the folder (a ``Path`` or ``str``) with its own SQLite gradebook:
        what the public functions that take a ``CourseDirLike`` (``autograde``, ``course.prepare``,
        ``course.nbgrader_config``, ``course.nbgrader_api``, ``gradebook.recorded``) do first."""
        return course_dir if isinstance(course_dir, CourseDir) else cls(Path(course_dir))

    def resolved(self) -> CourseDir:
        return CourseDir(self.path.resolve(), self.db_url)


CourseDirLike = CourseDir | Path | str
"""A ``CourseDir``, or a course folder that keeps its gradebook in the folder (``CourseDir.of``)."""
