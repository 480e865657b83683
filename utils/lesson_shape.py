"""How a lesson reads: the figures behind "a tip is a recipe card" (``benchmarks/lesson_shape.py``).

Measured on the solution notebooks, lesson cells only (the cells before the ``## Exercises``
heading):

- **long cells**: code cells over ``MAX_CELL_LINES`` lines;
- **sentence lines**: lines of lesson code that lie inside a string of at least
  ``SENTENCE_WORDS`` prose words (narration written in advance, which belongs in the ``why``
  tables); titles, captions and variant labels are names, not narration;
- **QUICK branches**: code that reads ``QUICK`` itself (``X if QUICK else Y``) instead of taking its
  sizes from ``bench.sizes``, the one channel for them; handing it to ``setup(..., quick=QUICK)`` is fine;
- from an executed notebook, **card words**: the words a comparison shows by default (its
  headline and table; the folded ``<details>`` block not counted), **headline words**: the words of
  each card's headline up to its first full stop, **lesson words per comparison**: every visible word
  of the lesson cells' outputs over the number of comparisons, and **table width**: the widest
  visible table or text output, in characters as ``utils.tables.text_table`` lays it out;
- **explaining plots**: sweeps and timelines (``utils.plots`` tags their images with
  ``data-plot``).

And in the exercises (the cells after the heading):

- **spec words**: the words of each ``### Exercise`` statement (its markdown up to the answer cell;
  fenced code blocks, the signatures, not counted);
- **test lines**: the non-blank lines of each visible test cell (graded, not an answer).
"""
from __future__ import annotations

import ast
import html.parser
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .units import first_sentence_words

MAX_CELL_LINES = 25
SENTENCE_WORDS = 6
# The targets of the lessons' shape (the report and the benchmark print them beside the figures).
TARGETS = {"lesson words per comparison": 120, "headline words": 20, "spec words": 200, "test lines": 15,
           "table width": 100}
EXPLAINING_PLOTS = ("sweep", "timeline")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]+")
_PROSE = re.compile(r"[A-Za-z][A-Za-z'’-]*")
NAME_ARGUMENTS = {"title", "caption", "headline"}  # names of what is shown, not narration
_CALLABLE = (ast.Lambda, ast.Name, ast.Attribute, ast.Call, ast.Subscript)
_EXERCISES = re.compile(r"^#{1,3} Exercises\b", re.M)
_EXERCISE = re.compile(r"^#{2,4} Exercise\b")
_FENCED = re.compile(r"^```.*?^```", re.M | re.S)
CARD_CLASS = "course-card"
HEADLINE_CLASS = "course-headline"  # as utils.present writes them (a test checks both names)


def lesson_cells(nb) -> list:
    """The cells before the notebook's Exercises heading (all cells when it has none)."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and _EXERCISES.search(cell.source):
            return nb.cells[:index]
    return list(nb.cells)


def exercise_cells(nb) -> list:
    """The cells from the Exercises heading on (none when the notebook has no such heading)."""
    return nb.cells[len(lesson_cells(nb)):]


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def spec_words(cells) -> list[int]:
    """Words of each exercise statement: an ``### Exercise`` markdown cell and the markdown cells
    after it, up to the next code cell or heading. Fenced code (a signature) is not counted, nor
    is a graded markdown cell (the instructor's rubric of a written answer)."""
    counts: list[int] = []
    inside = False
    for cell in cells:
        text = cell.source if cell.cell_type == "markdown" and not _nbgrader(cell).get("grade") else None
        if text is not None and _EXERCISE.match(text.lstrip()):
            counts.append(0)
            inside = True
        elif text is None or text.lstrip().startswith("#"):
            inside = False
        if inside:
            counts[-1] += len(_FENCED.sub(" ", text).split())
    return counts


def test_lines(cells) -> list[int]:
    """Non-blank lines of each visible test cell (graded code that is not an answer)."""
    return [len(code_lines(c.source)) for c in cells
            if c.cell_type == "code" and _nbgrader(c).get("grade") and not _nbgrader(c).get("solution")]


def quick_branches(source: str) -> int:
    """Places in ``source`` that read ``QUICK`` other than as ``quick=QUICK`` (sizes and timings
    depend on the mode through ``setup`` and ``bench.sizes``, not through branches in a lesson)."""
    try:
        tree = ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()))
    except SyntaxError:
        return 0
    handed = {id(k.value) for node in ast.walk(tree) if isinstance(node, ast.Call) for k in node.keywords
              if k.arg == "quick"}
    return sum(isinstance(node, ast.Name) and node.id == "QUICK" and isinstance(node.ctx, ast.Load)
               and id(node) not in handed for node in ast.walk(tree))


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
    """The words a reader sees in an HTML output: no <details> body, no style or script, no image;
    each card's headline; the width of each visible table."""

    def __init__(self):
        super().__init__()
        self.words: list[str] = []
        self.cards = 0
        self.plots: list[str] = []
        self.headlines: list[str] = []
        self.table_widths: list[int] = []
        self._hidden = 0  # depth inside <details>/<style>/<script> (a <summary> stays visible)
        self._summary = 0
        self._headline: list[str] | None = None
        self._card_top = 0    # 1: a card opened, its first <p> not yet; 2: inside that <p>; 3: past its title
        self._table: list[list[str]] | None = None   # rows of cell texts of the visible table being read

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("details", "style", "script"):
            self._hidden += 1
        if tag == "summary":
            self._summary += 1
        classes = (attrs.get("class") or "").split()
        if CARD_CLASS in classes:
            self.cards += 1
            self._card_top = 1
        if HEADLINE_CLASS in classes:
            self._headline, self._card_top = [], 0
        elif tag == "p" and self._card_top == 1:
            self._card_top = 2
        if tag == "img" and attrs.get("data-plot"):
            self.plots.append(attrs["data-plot"])
        if not self._hidden and tag == "table":
            self._table = []
        elif self._table is not None and tag == "tr":
            self._table.append([])
        elif self._table is not None and tag in ("td", "th") and self._table:
            self._table[-1].append("")
        elif self._table and self._table[-1] and tag == "br":
            self._table[-1][-1] += "\n"

    def handle_endtag(self, tag):
        if tag in ("details", "style", "script"):
            self._hidden = max(self._hidden - 1, 0)
        if tag == "summary":
            self._summary = max(self._summary - 1, 0)
        if tag == "b" and self._card_top == 2:  # a card without the headline's <span>: after its bold title
            self._headline, self._card_top = [], 3
        if (tag == "span" or tag == "p" and self._card_top == 3) and self._headline is not None:
            self.headlines.append("".join(self._headline).strip().removeprefix("·").strip())
            self._headline, self._card_top = None, 0
        if tag == "table" and self._table is not None:
            self.table_widths.append(table_width(self._table))
            self._table = None

    def handle_data(self, data):
        if not self._hidden or self._summary:
            self.words += _WORD.findall(data)
        if self._headline is not None:
            self._headline.append(data)
        if self._table and self._table[-1]:
            self._table[-1][-1] += data.strip()


def table_width(rows: list[list[str]]) -> int:
    """Characters a table takes as ``utils.tables.text_table`` lays it out: each column as wide as
    the widest line of its cells (a cell wraps at ``<br>``), two spaces between columns."""
    columns = max((len(row) for row in rows), default=0)
    widths = [max((len(line) for row in rows if i < len(row) for line in row[i].split("\n")), default=0)
              for i in range(columns)]
    return sum(widths) + 2 * max(columns - 1, 0)


@dataclass
class OutputShape:
    words: int = 0                                   # visible words in every lesson output
    card_words: list[int] = field(default_factory=list)  # visible words of each comparison card
    plots: list[str] = field(default_factory=list)   # data-plot kinds of the images shown
    headline_words: list[int] = field(default_factory=list)  # words of each card headline's first sentence
    widest: int = 0                                  # the widest visible table or text output, in characters


def output_shape(cells) -> OutputShape:
    """Visible words, comparison cards and plots in the outputs of executed cells."""
    shape = OutputShape()
    for cell in cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.output_type == "stream":
                shape.words += len(_WORD.findall(output.text))
                shape.widest = max([shape.widest, *map(len, output.text.splitlines())])
                continue
            data = output.get("data", {})
            if "text/html" in data:
                parser = _VisibleText()
                parser.feed(data["text/html"])
                shape.words += len(parser.words)
                shape.plots += parser.plots
                shape.headline_words += [first_sentence_words(h) for h in parser.headlines]
                shape.widest = max([shape.widest, *parser.table_widths])
                if parser.cards:
                    shape.card_words += [len(parser.words) // parser.cards] * parser.cards
            elif "text/plain" in data and "image/png" not in data:
                shape.words += len(_WORD.findall(data["text/plain"]))
                shape.widest = max([shape.widest, *map(len, data["text/plain"].splitlines())])
    return shape


@dataclass
class NotebookShape:
    name: str
    cells: int
    long_cells: list[int]       # line counts of the lesson code cells over MAX_CELL_LINES
    lines: int
    sentence_lines: int
    quick_branches: int = 0     # places that read QUICK instead of taking sizes from bench.sizes
    spec_words: list[int] = field(default_factory=list)   # words of each exercise statement
    test_lines: list[int] = field(default_factory=list)   # non-blank lines of each visible test cell
    output: OutputShape | None = None

    @property
    def sentence_share(self) -> float:
        return self.sentence_lines / self.lines if self.lines else 0.0


def notebook_shape(source: Path, executed: Path | None = None) -> NotebookShape:
    """The figures of one solution notebook; output figures when its executed copy is given."""
    nb = nbformat.read(source, as_version=4)
    cells = [c for c in lesson_cells(nb) if c.cell_type == "code"]
    sizes = [len(c.source.rstrip().splitlines()) for c in cells]
    lines = sum(len(code_lines(c.source)) for c in cells)
    narrated = sum(len({n for n in sentence_lines(c.source)
                        if n <= len(c.source.splitlines()) and c.source.splitlines()[n - 1].strip()})
                   for c in cells)
    branches = sum(quick_branches(c.source) for c in nb.cells if c.cell_type == "code"
                   and "parameters" not in c.get("metadata", {}).get("tags", []))
    output = None
    if executed is not None and executed.is_file():
        output = output_shape(lesson_cells(nbformat.read(executed, as_version=4)))
    exercises = exercise_cells(nb)
    return NotebookShape(source.stem, len(cells), [n for n in sizes if n > MAX_CELL_LINES], lines, narrated,
                         branches, spec_words(exercises), test_lines(exercises), output)


def _median_max(values: list[int]) -> str:
    return f"{statistics.median(values):.0f}, {max(values)}" if values else "-"


def _figures(shapes: list[NotebookShape]) -> dict[str, str]:
    """The figures of one notebook or, summed and pooled, of several."""
    lines, narrated = sum(s.lines for s in shapes), sum(s.sentence_lines for s in shapes)
    specs = [n for s in shapes for n in s.spec_words]
    tests = [n for s in shapes for n in s.test_lines]
    row = {"code cells": str(sum(s.cells for s in shapes)),
           f"over {MAX_CELL_LINES} lines": str(sum(len(s.long_cells) for s in shapes)),
           "prose in code": f"{narrated / lines if lines else 0:.0%}",
           "QUICK branches": str(sum(s.quick_branches for s in shapes)),
           "spec words (median, max)": _median_max(specs),
           f"tests over {TARGETS['test lines']} lines": f"{sum(n > TARGETS['test lines'] for n in tests)}/{len(tests)}"}
    outputs = [s.output for s in shapes if s.output is not None]
    if outputs:
        cards = [n for o in outputs for n in o.card_words]
        heads = [n for o in outputs for n in o.headline_words]
        row["comparisons"] = str(len(cards))
        row["words per comparison"] = f"{sum(o.words for o in outputs) / len(cards):.0f}" if cards else "-"
        row["headline words (median, max)"] = _median_max(heads)
        row["widest table"] = str(max(o.widest for o in outputs))
        row["sweeps, timelines"] = str(sum(p in EXPLAINING_PLOTS for o in outputs for p in o.plots))
    return row


def rows(shapes: list[NotebookShape]) -> list[dict[str, str]]:
    """One table row per notebook, a total row, and the targets, as strings."""
    table = [{"notebook": s.name, **_figures([s])} for s in shapes]
    table.append({"notebook": "all", **_figures(shapes)})
    goals = {f"over {MAX_CELL_LINES} lines": "0", "prose in code": "0%", "QUICK branches": "0",
             "spec words (median, max)": f"max {TARGETS['spec words']}",
             f"tests over {TARGETS['test lines']} lines": "0",
             "words per comparison": f"{TARGETS['lesson words per comparison']}",
             "headline words (median, max)": f"max {TARGETS['headline words']}",
             "widest table": f"{TARGETS['table width']}"}
    table.append({"notebook": "target", **{k: goals.get(k, "") for k in table[-1] if k != "notebook"}})
    return table
