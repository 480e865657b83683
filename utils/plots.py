"""The course's figures (matplotlib): a comparison's bars, a sweep's curves, a CPU/GPU timeline,
a comparison across a class's devices.

Each figure comes back as inline HTML (``figure_html``) whose ``<img>`` names its kind in
``data-plot``, so a report or a test can tell a sweep from a bar chart. matplotlib is imported when
the first figure is drawn, not with this module: it costs most of a second, and the grader's
sandbox imports the toolkit for every exercise without drawing anything.
"""
from __future__ import annotations

import base64
import html
import io
import math
import textwrap

from .comparison import Comparison, Sweep, Timeline
from .units import format_ratio
from .verdict import launch_bound_reason, memory_verdict

BASELINE_COLOR, VARIANT_COLOR = "#9e9e9e", "#1f77b4"
LOG_RATIO = 20  # bars or curves whose values span more than this get a log axis
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def _pyplot():
    import matplotlib

    if not matplotlib.get_backend().lower().startswith(("module://", "nbagg", "ipympl")):
        matplotlib.use("Agg")  # no window: figures become PNGs
    import matplotlib.pyplot as plt
    return plt


def _wrap(label: str, width: int = 28) -> str:
    """Long variant labels on several lines, so the axes keep their width."""
    return "\n".join(textwrap.wrap(label, width)) or label


def _time_unit(largest: float) -> tuple[float, str]:
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if largest >= scale:
            return scale, unit
    return 1e-9, "ns"


def _spans(values: list[float]) -> bool:
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) / min(positive) > LOG_RATIO


def comparison_figure(result: Comparison):
    """Bars of median time (whiskers: the IQR) with each variant's ratio to the baseline, and a
    peak-memory panel only when the variants' peaks differ."""
    plt = _pyplot()
    rows = result.rows
    memory = any(v is not None and v.kind != "same memory" for v in (memory_verdict(result, r) for r in rows[1:]))
    labels = [_wrap(r.label) for r in rows]
    lines = sum(label.count("\n") + 1 for label in labels)
    fig, axes = plt.subplots(1, 2 if memory else 1, figsize=(9 if memory else 6, 1.0 + 0.3 * lines + 0.15 * len(rows)),
                             squeeze=False, layout="constrained")
    colors = [BASELINE_COLOR] + [VARIANT_COLOR] * (len(rows) - 1)
    scale, unit = _time_unit(max(r.median for r in rows))
    ax = axes[0][0]
    lows = [max(r.median - r.quartiles()[0], 0) / scale for r in rows]
    highs = [max(r.quartiles()[1] - r.median, 0) / scale for r in rows]
    ax.barh(labels, [r.median / scale for r in rows], xerr=[lows, highs], color=colors, capsize=3)
    log = _spans([r.median for r in rows])
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(f"median time per call ({unit}{', log scale' if log else ''}); whiskers: the IQR")
    for y, (r, high) in enumerate(zip(rows, highs)):
        end = r.median / scale + high  # the label starts past the whisker
        ax.annotate(format_ratio(result.speedup(r)) if y else "baseline", (end, y), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ax.margins(x=0.3)
    if memory:
        mem = axes[0][1]
        mem.barh(labels, [(r.peak_bytes or 0) / 2**20 for r in rows], color=colors)
        mem.set_xlabel("peak memory (MiB)")
        mem.set_yticklabels([])
    for a in axes[0]:
        a.invert_yaxis()
    launch_bound = " (launch-bound: these bars time launches, not the tip)" if launch_bound_reason(result) else ""
    fig.suptitle(f"{result.tip}: {result.title}{launch_bound}", fontsize=10)
    return fig


def sweep_figure(sweep: Sweep):
    """One curve per variant against the swept size: time per call, or a rate (``sweep.rate``);
    log axes where the values span more than LOG_RATIO."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.4), layout="constrained")
    labels = [row.label for row in sweep.comparisons[0].rows]
    rate = sweep.rate
    series = {label: [] for label in labels}
    for value, comparison in zip(sweep.values, sweep.comparisons):
        for row in comparison.rows:
            series[row.label].append(rate.of(value, row.median) if rate else row.median)
    scale, unit = (1.0, rate.unit) if rate else _time_unit(max(max(v) for v in series.values()))
    for color, (label, ys) in zip(COLORS, series.items()):
        ax.plot(sweep.values, [y / scale for y in ys], marker="o", color=color, label=label)
    powers_of_two = all(v > 0 and math.log2(v).is_integer() for v in sweep.values)
    if powers_of_two and len(sweep.values) > 2 or _spans(list(sweep.values)):
        ax.set_xscale("log", base=2 if powers_of_two else 10)
    if _spans([y for ys in series.values() for y in ys]):
        ax.set_yscale("log")
    ax.set_xlabel(sweep.over)
    ax.set_ylabel(rate.unit if rate else f"median time per call ({unit})")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(f"{sweep.tip}: {sweep.title} on {sweep.comparisons[0].device_name}", fontsize=10)
    return fig


def timeline_figure(timeline: Timeline):
    """Lanes of spans over time (what the CPU ran, what each GPU stream ran), one panel per variant,
    on one time axis so the variants' lengths compare."""
    plt = _pyplot()
    variants = list(dict.fromkeys(span.variant for span in timeline.spans))
    lanes = list(dict.fromkeys(span.lane for span in timeline.spans))
    fig, axes = plt.subplots(len(variants), 1, figsize=(8, 1.2 + 0.5 * len(lanes) * len(variants)),
                             squeeze=False, sharex=True, layout="constrained")
    scale, unit = _time_unit(max(span.end for span in timeline.spans))
    names = sorted({span.name for span in timeline.spans}, key=lambda n: (n == "other torch ops", n))
    palette = plt.get_cmap("tab10").colors
    color = {name: "#bbbbbb" if name == "other torch ops" else palette[i % len(palette)] for i, name in enumerate(names)}
    for ax, variant in zip(axes[:, 0], variants):
        for y, lane in enumerate(lanes):
            for name in names:
                bars = [(s.start / scale, (s.end - s.start) / scale) for s in timeline.spans
                        if s.variant == variant and s.lane == lane and s.name == name]
                if bars:
                    ax.broken_barh(bars, (y - 0.35, 0.7), color=color[name])
        ax.set_yticks(range(len(lanes)), lanes)
        ax.set_ylim(len(lanes) - 0.5, -0.5)
        ax.set_ylabel(_wrap(variant, 20), rotation=0, ha="right", va="center", fontsize=9)
    axes[-1][0].set_xlabel(f"time since the call started ({unit})")
    handles = [plt.Rectangle((0, 0), 1, 1, color=color[name]) for name in names]
    fig.legend(handles, names, fontsize=8, loc="outside lower center", ncol=min(len(names), 4))
    fig.suptitle(f"{timeline.tip}: {timeline.title} on {timeline.device_name}", fontsize=10)
    return fig


def class_figure(title: str, series: dict[str, dict[str, tuple[float, float, float]]],
                 references: dict[str, dict[str, float]] | None = None):
    """A comparison across devices: for each variant (rows), each device's median speed-up over the
    baseline with whiskers from its ``low`` to its ``high`` (``series``: device -> variant ->
    (median, low, high)), and each reference run's speed-up as a hollow diamond; a log axis where
    the values span more than LOG_RATIO."""
    plt = _pyplot()
    series = {_literal(d): {_literal(v): x for v, x in rows.items()} for d, rows in series.items()}
    references = {_literal(d): {_literal(v): x for v, x in rows.items()} for d, rows in (references or {}).items()}
    variants = list(dict.fromkeys(v for rows in (*series.values(), *references.values()) for v in rows))
    lanes = len(series) + len(references)
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.22 * lanes * len(variants)), layout="constrained")
    step = 0.8 / max(1, lanes)
    for k, (device, rows) in enumerate(series.items()):
        ys = [variants.index(v) + (k - (lanes - 1) / 2) * step for v in rows]
        medians = [m for m, _, _ in rows.values()]
        errors = [[max(m - lo, 0) for m, lo, _ in rows.values()], [max(hi - m, 0) for m, _, hi in rows.values()]]
        ax.errorbar(medians, ys, xerr=errors, fmt="o", color=COLORS[k % len(COLORS)], capsize=3, label=device)
    for k, (name, rows) in enumerate(references.items(), start=len(series)):
        ys = [variants.index(v) + (k - (lanes - 1) / 2) * step for v in rows]
        ax.plot(list(rows.values()), ys, "D", mfc="none", color="#333333", label=name)
    ax.axvline(1.0, color=BASELINE_COLOR, linestyle="--", linewidth=1)
    values = [m for rows in series.values() for m, _, _ in rows.values()] + \
             [x for rows in references.values() for x in rows.values()] + [1.0]
    log = _spans(values)
    if log:
        ax.set_xscale("log")
    ax.set_yticks(range(len(variants)), [_wrap(v) for v in variants])
    ax.set_ylim(len(variants) - 0.5, -0.5)
    ax.set_xlabel(f"speed-up over the baseline{' (log scale)' if log else ''}: the median learner; "
                  "whiskers: the middle half")
    ax.grid(axis="x", which="major", alpha=0.3)
    fig.legend(fontsize=7, loc="outside lower center", ncol=2)
    fig.suptitle(_literal(title), fontsize=10)
    return fig


def _literal(text: str, limit: int = 60) -> str:
    """Text shown as written (names from a learner's records): ``$`` starts no mathtext; cut at ``limit``."""
    text = text if len(text) <= limit else text[:limit - 1] + "…"
    return text.replace("$", r"\$")


def phase_figure(columns: dict[str, dict[str, float]], title: str, unit: str = "ms"):
    """Horizontal bars: time per phase (rows) for each column (e.g. "before", "after", or host/GPU).

    ``columns`` maps a column name to {phase: time in ``unit``}; phases keep their first-seen order.
    """
    plt = _pyplot()
    phases = list(dict.fromkeys(p for values in columns.values() for p in values))
    fig, ax = plt.subplots(figsize=(8.5, 0.9 + 0.42 * len(phases) * max(1, len(columns)) ** 0.5),
                           layout="constrained")
    height = 0.8 / max(1, len(columns))
    for k, (name, values) in enumerate(columns.items()):
        ys = [i + (k - (len(columns) - 1) / 2) * height for i in range(len(phases))]
        bars = [values.get(p, 0.0) for p in phases]
        ax.barh(ys, bars, height=height, color=COLORS[(k + 3) % len(COLORS)], label=name)
        for y, v in zip(ys, bars):
            ax.annotate(f" {v:.3g}", (v, y), va="center", fontsize=7)
    ax.set_yticks(range(len(phases)), [_wrap(p, 36) for p in phases])
    ax.invert_yaxis()
    ax.set_xlabel(f"time per step ({unit})")
    ax.margins(x=0.15)
    ax.grid(axis="x", alpha=0.3)
    if len(columns) > 1:
        ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title, fontsize=10)
    return fig


class Shown:
    """A figure for a notebook cell: shows as an inline image, tagged with its kind."""

    def __init__(self, fig, kind: str):
        self.html = figure_html(fig, kind)

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<{self.html.split(' src=')[0][1:]}>"


def figure_png(fig) -> bytes:
    """Render and close a figure (closing keeps long notebooks from leaking figures)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    _pyplot().close(fig)
    return buffer.getvalue()


def figure_html(fig, kind: str) -> str:
    """The figure as an inline ``<img>``; ``kind`` ("bars", "sweep", "timeline") goes in data-plot."""
    title = fig._suptitle.get_text() if fig._suptitle else "plot"
    data = base64.b64encode(figure_png(fig)).decode("ascii")
    return (f'<img data-plot="{html.escape(kind)}" alt="{html.escape(title)}" '
            f'src="data:image/png;base64,{data}"/>')

