"""One class's grading place: the nbgrader course folder and where its gradebook lives."""
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
    def of(cls, place: CourseDir | Path | str) -> CourseDir:
        """A CourseDir as given, or the folder with its own SQLite gradebook."""
        return place if isinstance(place, CourseDir) else cls(Path(place))

    def resolved(self) -> CourseDir:
        return CourseDir(self.path.resolve(), self.db_url)
