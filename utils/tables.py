"""Plain tables: HTML for Jupyter and the report, text elsewhere (no matplotlib needed); and
``attempt``, a demo's one-line account of what a call does.
"""
from __future__ import annotations

import html
import re
import textwrap
import warnings
from typing import Callable


# The course's HTML pages (the run report, the grader's class report): one look.
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; }
caption { text-align: left; font-weight: 600; padding-bottom: .3em; }
section { border-top: 1px solid #ddd; margin-top: 1.5em; }
.failed { color: #b00020; font-weight: 600; }
"""


# A cell wraps at word boundaries past these widths (characters), so that a table stays within about
# 100 characters: a long error message or label becomes a few lines instead of a wide column.
CELL_WRAP = 40
HEAD_WRAP = 20


def _lines(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]


def html_table(rows: list[dict[str, str]], caption: str = "") -> str:
    """A plain HTML table; the column set is the union of the rows' keys, in first-seen order. Long
    cells wrap (``CELL_WRAP``, ``HEAD_WRAP`` for the header) with ``<br>``."""
    columns = list(dict.fromkeys(k for row in rows for k in row))

    def cell(text: str, width: int) -> str:
        return "<br>".join(html.escape(line) for line in _lines(str(text), width))
    head = "".join(f"<th>{cell(c, HEAD_WRAP)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(row.get(c, ''), CELL_WRAP)}</td>" for c in columns) + "</tr>" for row in rows
    )
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def text_table(rows: list[dict[str, str]]) -> str:
    """The same table as text: columns padded to their widest line, long cells wrapped as in HTML."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    grid = [[_lines(c, HEAD_WRAP) for c in columns]]
    grid += [[_lines(str(r.get(c, "")), CELL_WRAP) for c in columns] for r in rows]
    widths = [max(len(line) for row in grid for line in row[i]) for i in range(len(columns))]
    lines = []
    for row in grid:
        for k in range(max(len(cell) for cell in row)):
            lines.append("  ".join((cell[k] if k < len(cell) else "").ljust(w) for cell, w in zip(row, widths)))
    return "\n".join(lines)


class Table:
    """Rows of plain values that render as an HTML table in Jupyter and as text elsewhere.
    ``folded=True``: in Jupyter only the caption shows, and the table opens on a click (reference
    material beside a lesson: a long list, a full profile)."""

    def __init__(self, rows: list[dict] | dict, caption: str = "", folded: bool = False):
        if isinstance(rows, dict):
            rows = [{"name": k, "value": v} for k, v in rows.items()]
        if folded and not caption:
            raise ValueError("a folded table needs a caption: it is all the reader sees before opening it")
        self.rows = [{k: str(v) for k, v in row.items()} for row in rows]
        self.caption = caption
        self.folded = folded

    def _repr_html_(self) -> str:
        if self.folded:
            return f"<details><summary>{html.escape(self.caption)}</summary>{html_table(self.rows)}</details>"
        return html_table(self.rows, self.caption)

    def __repr__(self) -> str:
        return (self.caption + "\n" if self.caption else "") + text_table(self.rows)



class Folded:
    """A long text shown folded in Jupyter: its caption, and the text on a click (a profiler's full
    ``key_averages().table()``, a function's source). ``language``: highlight it as that language."""

    def __init__(self, text: str, caption: str, language: str | None = None):
        self.text, self.caption, self.language = text, caption, language

    def _repr_html_(self) -> str:
        if self.language:
            from IPython.display import Code

            body = Code(self.text, language=self.language)._repr_html_()
        else:
            body = f"<pre>{html.escape(self.text)}</pre>"
        return f"<details><summary>{html.escape(self.caption)}</summary>{body}</details>"

    def __repr__(self) -> str:
        return f"{self.caption}\n{self.text}"


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)])\. ")


def _silenced_by_message() -> list[dict]:
    """The active "ignore" filters that name a message, as ``filterwarnings`` arguments."""
    return [{"action": "ignore", "message": message.pattern, "category": category,
             "module": module.pattern if module else "", "lineno": lineno}
            for action, message, category, module, lineno in reversed(warnings.filters)
            if action == "ignore" and message is not None]


def _clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a word boundary where one is near, marked "…"."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    if space >= limit * 2 // 3:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def attempt(fn: Callable[[], object], *, ok: str | None = None, brief: bool = False, warned: bool = False,
            containing: str = "", limit: int = 100) -> str:
    """What a call does here, in one line, for a demo table: its result (a string as it is, a tensor
    as its shape, anything else as its repr; ``ok``: that word instead) with, if ``warned``, the
    warnings it raised; or the error it raises: its type and the first line of its message (the
    first line ``containing`` a phrase, if one does), cut at its first sentence and ``limit``
    characters (``brief``: the type alone)."""
    try:
        silenced = _silenced_by_message()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always" if warned else "ignore")
            for kept in silenced:  # a notice silenced on purpose (session.QUIET) stays silent
                warnings.filterwarnings(**kept)
            out = fn()
    except Exception as err:  # noqa: BLE001 (showing any error is the point)
        if brief:
            return type(err).__name__
        lines = [line.strip() for line in str(err).splitlines() if line.strip()] or [""]
        line = next((line for line in lines if containing and containing in line), lines[0])
        first = _SENTENCE_END.split(line)[0].rstrip(".")
        return f"{type(err).__name__}: {_clip(first, limit)}"
    shown = ok if ok is not None else out if isinstance(out, str) else (
        f"shape {tuple(out.shape)}" if hasattr(out, "shape") and hasattr(out, "grad_fn") else repr(out))
    notes = [f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught] if warned else []
    return "; ".join([shown, *notes])
