"""The standard comparison plot (matplotlib), as PNG or inline HTML for Jupyter and the report.

Imported only when a plot is drawn: matplotlib takes most of a second to import.
"""
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
    # Whiskers from the 25th to the 75th percentile: the middle half of the runs.
    spread = [[max(r.median - r.quartiles()[0], 0) / scale for r in rows],
              [max(r.quartiles()[1] - r.median, 0) / scale for r in rows]]
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
    launch_bound = " (launch-bound: these bars measure launches, not the tip)" if result.launch_bound() else ""
    fig.suptitle(f"{result.tip}: {result.title}{launch_bound}", fontsize=10)
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
