"""Read a submitted notebook defensively and take out the student's answer cells.

Only the answer (solution) cells of the course's SOURCE notebook are taken, matched by their
nbgrader grade id; everything else in the file (test cells, metadata, points, outputs, other
cells, the kernel name) is ignored, so editing it cannot change a grade.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

MAX_BYTES = 50 * 2**20


class Unreadable(Exception):
    """The submission cannot be graded; the message says why, for the student and instructor."""


@dataclass
class Answers:
    sha256: str
    cells: dict[str, str]                          # answer grade_id -> source (present ones only)
    nb: nbformat.NotebookNode                      # the whole notebook, as read and vetted here
    notes: list[str] = field(default_factory=list)


def locate(folder: Path, notebook_name: str) -> tuple[Path, list[str]]:
    """The notebook to grade in a submission folder, tolerating one renamed notebook."""
    expected = folder / notebook_name
    if expected.is_file():
        return expected, []
    notebooks = sorted(p for p in folder.glob("*.ipynb") if p.is_file())
    if len(notebooks) == 1:
        return notebooks[0], [f"graded {notebooks[0].name}: expected the notebook to be named {notebook_name}"]
    present = ", ".join(sorted(p.name for p in folder.iterdir())) or "nothing"
    raise Unreadable(f"expected {notebook_name} in the submission, found {present}")


def read(folder: Path, notebook_name: str, answer_ids: list[str], written_ids: tuple[str, ...] = ()) -> Answers:
    """``answer_ids``: code answers (run by the grader); ``written_ids``: manually graded answers
    (any cell type, taken as text for the instructor)."""
    path, notes = locate(folder, notebook_name)
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise Unreadable(f"{path.name} is {size / 2**20:.0f} MiB, over the {MAX_BYTES // 2**20} MiB limit "
                         "(clear the outputs and submit again)")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{path.name} is not UTF-8 text (byte {exc.start}): was it saved by Jupyter?") from None
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unreadable(f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno}): "
                         "the file is damaged; download it again from Jupyter") from None
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as exc:  # nbformat raises several types for files that are JSON but not notebooks
        raise Unreadable(f"{path.name} is not a Jupyter notebook ({type(exc).__name__}: {str(exc)[:200]})") from None
    kernel = nb.get("metadata", {}).get("kernelspec", {}).get("name")
    if kernel not in (None, "python3"):
        notes.append(f"the notebook's kernel {kernel!r} was ignored: answers are always run with Python 3")
    return Answers(hashlib.sha256(raw).hexdigest(), _answer_cells(nb, answer_ids, written_ids, notes), nb, notes)


def _answer_cells(nb, answer_ids: list[str], written_ids, notes: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    wanted = [*answer_ids, *written_ids]
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if grade_id not in wanted or grade_id in found:
            continue  # like nbgrader, the first cell with a grade id wins
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if grade_id in answer_ids and cell.get("cell_type") != "code":
            notes.append(f"answer cell {grade_id!r} is not a code cell: it was not run")
            continue
        found[grade_id] = source
    for grade_id in wanted:
        if grade_id not in found and not any(grade_id in n for n in notes):
            notes.append(f"answer cell {grade_id!r} is missing from the notebook")
    return found
