"""Tables and the standard comparison plot (matplotlib), as HTML for Jupyter and the report."""
from __future__ import annotations

import base64
import html
import io
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg") if not matplotlib.get_backend().lower().startswith(("module://", "nbagg", "ipympl")) else None
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    from .bench import Comparison

BASELINE_COLOR, VARIANT_COLOR = "#9e9e9e", "#1f77b4"


def comparison_figure(result: "Comparison") -> plt.Figure:
    """Bars of median time (IQR as error bars) and, when measured, peak memory."""
    rows = result.rows
    has_memory = any(r.peak_bytes is not None for r in rows)
    fig, axes = plt.subplots(1, 2 if has_memory else 1, figsize=(9 if has_memory else 5.5, 0.6 + 0.55 * len(rows)),
                             squeeze=False)
    labels = [r.label for r in rows]
    colors = [BASELINE_COLOR] + [VARIANT_COLOR] * (len(rows) - 1)
    scale, unit = _time_unit(max(r.median for r in rows))
    ax = axes[0][0]
    # Half the IQR either side of the median (clipped at zero): the spread of the middle half of runs.
    spread = [[min(r.iqr / 2, r.median) / scale for r in rows], [r.iqr / 2 / scale for r in rows]]
    ax.barh(labels, [r.median / scale for r in rows], xerr=spread, color=colors, capsize=3)
    ax.set_xlabel(f"median time per call ({unit}); whiskers span the IQR")
    for y, r in enumerate(rows):
        ax.annotate(f" {result.speedup(r):.2f}x", (r.median / scale, y), va="center", fontsize=8)
    if has_memory:
        mem = axes[0][1]
        mem.barh(labels, [(r.peak_bytes or 0) / 2**20 for r in rows], color=colors)
        mem.set_xlabel("peak memory (MiB)")
        mem.set_yticklabels([])
    for a in axes[0]:
        a.invert_yaxis()
        a.margins(x=0.25)
    fig.suptitle(f"{result.tip}: {result.title}", fontsize=10)
    fig.tight_layout()
    return fig


def _time_unit(largest: float) -> tuple[float, str]:
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if largest >= scale:
            return scale, unit
    return 1e-9, "ns"


def figure_png(fig: plt.Figure) -> bytes:
    """Render and close a figure (closing keeps long notebooks from leaking figures)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def figure_html(fig: plt.Figure) -> str:
    data = base64.b64encode(figure_png(fig)).decode("ascii")
    return f'<img alt="{html.escape(fig._suptitle.get_text() if fig._suptitle else "plot")}" src="data:image/png;base64,{data}"/>'


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
