"""Plain tables: HTML for Jupyter and the report, text elsewhere (no matplotlib needed)."""
from __future__ import annotations

import html


def html_table(rows: list[dict[str, str]], caption: str = "") -> str:
    """A plain HTML table; the column set is the union of the rows' keys, in first-seen order."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(row.get(c, '')))}</td>" for c in columns) + "</tr>" for row in rows
    )
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def text_table(rows: list[dict[str, str]]) -> str:
    columns = list(dict.fromkeys(k for row in rows for k in row))
    widths = [max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(str(r.get(c, "")).ljust(w) for c, w in zip(columns, widths)) for r in rows]
    return "\n".join(lines)


class Table:
    """Rows of plain values that render as an HTML table in Jupyter and as text elsewhere."""

    def __init__(self, rows: list[dict] | dict, caption: str = ""):
        if isinstance(rows, dict):
            rows = [{"name": k, "value": v} for k, v in rows.items()]
        self.rows = [{k: str(v) for k, v in row.items()} for row in rows]
        self.caption = caption

    def _repr_html_(self) -> str:
        return html_table(self.rows, self.caption)

    def __repr__(self) -> str:
        return (self.caption + "\n" if self.caption else "") + text_table(self.rows)

