"""How a lesson reads: the figures behind "a tip is a recipe card" (``benchmarks/lesson_shape.py``).

Measured on the solution notebooks, lesson cells only (the cells before the ``## Exercises``
heading):

- **long cells**: code cells over ``MAX_CELL_LINES`` lines;
- **sentence lines**: lines of lesson code that lie inside a string of at least
  ``SENTENCE_WORDS`` prose words (narration written in advance, which belongs in the ``why``
  tables); titles, captions and variant labels are names, not narration;
- from an executed notebook, **card words**: the words a comparison shows by default (its
  headline and table; the folded ``<details>`` block not counted), and **lesson words per
  comparison**: every visible word of the lesson cells' outputs over the number of comparisons;
- **explaining plots**: sweeps and timelines (``utils.plots`` tags their images with
  ``data-plot``).
"""
from __future__ import annotations

import ast
import html.parser
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

MAX_CELL_LINES = 25
SENTENCE_WORDS = 6
EXPLAINING_PLOTS = ("sweep", "timeline")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]+")
_PROSE = re.compile(r"[A-Za-z][A-Za-z'’-]*")
NAME_ARGUMENTS = {"title", "caption", "headline"}  # names of what is shown, not narration
_CALLABLE = (ast.Lambda, ast.Name, ast.Attribute, ast.Call, ast.Subscript)
_EXERCISES = re.compile(r"^#{1,3} Exercises\b", re.M)
CARD_CLASS = "course-card"


def lesson_cells(nb) -> list:
    """The cells before the notebook's Exercises heading (all cells when it has none)."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and _EXERCISES.search(cell.source):
            return nb.cells[:index]
    return list(nb.cells)


def code_lines(source: str) -> list[str]:
    return [line for line in source.splitlines() if line.strip()]


def english_words(text: str) -> int:
    """Words of prose in a string: tokens of letters only once outer punctuation is stripped, so
    code inside a string ("torch.ones(...)", "x_cpu", "2048") does not count."""
    return sum(bool(_PROSE.fullmatch(token.strip("()[]{},.;:!?\"'`"))) for token in text.split())


def sentence_lines(source: str) -> set[int]:
    """Line numbers (1-based) of ``source`` inside a string of SENTENCE_WORDS prose words or more.
    Names are not narration: a ``title=``, ``caption=`` or ``headline=`` argument and the label that
    starts a ``(label, fn)`` variant do not count. Magics are blanked; code that does not parse
    counts nothing."""
    python = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        tree = ast.parse(python)
    except SyntaxError:
        return set()
    names, parts = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            names.update(id(k.value) for k in node.keywords if k.arg in NAME_ARGUMENTS)
        elif isinstance(node, ast.Tuple) and 2 <= len(node.elts) <= 3 and isinstance(node.elts[1], _CALLABLE):
            names.add(id(node.elts[0]))
        elif isinstance(node, ast.JoinedStr):
            parts.update(id(value) for value in node.values)
    found: set[int] = set()
    for node in ast.walk(tree):
        if id(node) in names or id(node) in parts:
            continue
        if isinstance(node, ast.JoinedStr):
            text = " ".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if english_words(text) >= SENTENCE_WORDS:
            found.update(range(node.lineno, node.end_lineno + 1))
    return found


class _VisibleText(html.parser.HTMLParser):
    """The words a reader sees in an HTML output: no <details> body, no style or script, no image."""

    def __init__(self):
        super().__init__()
        self.words: list[str] = []
        self.cards = 0
        self.plots: list[str] = []
        self._hidden = 0  # depth inside <details>/<style>/<script> (a <summary> stays visible)
        self._summary = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("details", "style", "script"):
            self._hidden += 1
        if tag == "summary":
            self._summary += 1
        if CARD_CLASS in (attrs.get("class") or "").split():
            self.cards += 1
        if tag == "img" and attrs.get("data-plot"):
            self.plots.append(attrs["data-plot"])

    def handle_endtag(self, tag):
        if tag in ("details", "style", "script"):
            self._hidden = max(self._hidden - 1, 0)
        if tag == "summary":
            self._summary = max(self._summary - 1, 0)

    def handle_data(self, data):
        if not self._hidden or self._summary:
            self.words += _WORD.findall(data)


@dataclass
class OutputShape:
    words: int = 0                                   # visible words in every lesson output
    card_words: list[int] = field(default_factory=list)  # visible words of each comparison card
    plots: list[str] = field(default_factory=list)   # data-plot kinds of the images shown


def output_shape(cells) -> OutputShape:
    """Visible words, comparison cards and plots in the outputs of executed cells."""
    shape = OutputShape()
    for cell in cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.output_type == "stream":
                shape.words += len(_WORD.findall(output.text))
                continue
            data = output.get("data", {})
            if "text/html" in data:
                parser = _VisibleText()
                parser.feed(data["text/html"])
                shape.words += len(parser.words)
                shape.plots += parser.plots
                if parser.cards:
                    shape.card_words += [len(parser.words) // parser.cards] * parser.cards
            elif "text/plain" in data and "image/png" not in data:
                shape.words += len(_WORD.findall(data["text/plain"]))
    return shape


@dataclass
class NotebookShape:
    name: str
    cells: int
    long_cells: list[int]       # line counts of the lesson code cells over MAX_CELL_LINES
    lines: int
    sentence_lines: int
    output: OutputShape | None = None

    @property
    def sentence_share(self) -> float:
        return self.sentence_lines / self.lines if self.lines else 0.0


def notebook_shape(source: Path, executed: Path | None = None) -> NotebookShape:
    """The figures of one solution notebook; output figures when its executed copy is given."""
    cells = [c for c in lesson_cells(nbformat.read(source, as_version=4)) if c.cell_type == "code"]
    sizes = [len(c.source.rstrip().splitlines()) for c in cells]
    lines = sum(len(code_lines(c.source)) for c in cells)
    narrated = sum(len({n for n in sentence_lines(c.source)
                        if n <= len(c.source.splitlines()) and c.source.splitlines()[n - 1].strip()})
                   for c in cells)
    output = None
    if executed is not None and executed.is_file():
        output = output_shape(lesson_cells(nbformat.read(executed, as_version=4)))
    return NotebookShape(source.stem, len(cells), [n for n in sizes if n > MAX_CELL_LINES], lines, narrated, output)


def rows(shapes: list[NotebookShape]) -> list[dict[str, str]]:
    """One table row per notebook and a total row, as strings."""
    table = []
    for s in shapes:
        row = {"notebook": s.name, "lesson code cells": str(s.cells),
               f"over {MAX_CELL_LINES} lines": str(len(s.long_cells)),
               "longest": str(max(s.long_cells, default=0) or "-"),
               "sentence lines": f"{s.sentence_lines}/{s.lines} ({s.sentence_share:.0%})"}
        if s.output is not None:
            cards = s.output.card_words
            row["comparisons"] = str(len(cards))
            row["card words (median, max)"] = f"{statistics.median(cards):.0f}, {max(cards)}" if cards else "-"
            row["lesson words per comparison"] = f"{s.output.words / len(cards):.0f}" if cards else "-"
            row["sweeps and timelines"] = str(sum(p in EXPLAINING_PLOTS for p in s.output.plots))
        table.append(row)
    lines = sum(s.lines for s in shapes)
    narrated = sum(s.sentence_lines for s in shapes)
    total = {"notebook": "all", "lesson code cells": str(sum(s.cells for s in shapes)),
             f"over {MAX_CELL_LINES} lines": str(sum(len(s.long_cells) for s in shapes)),
             "longest": str(max((n for s in shapes for n in s.long_cells), default=0) or "-"),
             "sentence lines": f"{narrated}/{lines} ({narrated / lines if lines else 0:.0%})"}
    outputs = [s.output for s in shapes if s.output is not None]
    if outputs:
        cards = [n for o in outputs for n in o.card_words]
        total["comparisons"] = str(len(cards))
        total["card words (median, max)"] = f"{statistics.median(cards):.0f}, {max(cards)}" if cards else "-"
        total["lesson words per comparison"] = f"{sum(o.words for o in outputs) / len(cards):.0f}" if cards else "-"
        total["sweeps and timelines"] = str(sum(p in EXPLAINING_PLOTS for o in outputs for p in o.plots))
    table.append(total)
    return table
