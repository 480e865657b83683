"""The course report: one HTML page with every measurement of a run, plus the executed notebooks.

``build_report`` reads the measurement records (``build/measurements.jsonl``), rebuilds each
comparison's table and plot, and links the executed notebooks rendered to HTML.
"""
from __future__ import annotations

import datetime
import html
from dataclasses import dataclass
from pathlib import Path

from . import records
from .bench import Comparison
from .device import env_report
from .tables import html_table

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; }
caption { text-align: left; font-weight: 600; padding-bottom: .3em; }
section { border-top: 1px solid #ddd; margin-top: 1.5em; }
.failed { color: #b00020; font-weight: 600; }
"""


@dataclass
class NotebookRun:
    name: str
    seconds: float
    ok: bool
    html_path: Path | None = None
    error: str = ""


def _comparisons(all_records: list[records.Record]) -> list[Comparison]:
    groups: dict[str, list[records.Record]] = {}
    for record in all_records:
        groups.setdefault(record.comparison, []).append(record)
    return [Comparison.from_records(group) for group in groups.values()]


def build_report(records_path: Path, out_path: Path, runs: list[NotebookRun] = ()) -> Path:
    """Write the report page and return its path."""
    comparisons = _comparisons(records.load(records_path))
    parts = ["<h1>PyTorch tips: measured on this machine</h1>",
             f"<p>Generated {datetime.datetime.now():%Y-%m-%d %H:%M}. Every figure below was measured by "
             f"the notebooks during this run; none is typed in.</p>",
             html_table([{"": k, "value": v} for k, v in env_report().items()], caption="Environment")]
    if runs:
        rows = []
        for run in runs:
            link = (f'<a href="{html.escape(str(run.html_path.relative_to(out_path.parent)))}">{html.escape(run.name)}</a>'
                    if run.html_path else html.escape(run.name))
            status = "ok" if run.ok else f'<span class="failed">FAILED</span> {html.escape(run.error)}'
            rows.append(f"<tr><td>{link}</td><td>{run.seconds:.1f} s</td><td>{status}</td></tr>")
        parts.append("<table><caption>Notebooks executed</caption><thead><tr><th>notebook</th><th>time</th>"
                     "<th>status</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    parts.append(f"<h2>Measurements ({len(comparisons)})</h2>")
    if not comparisons:
        parts.append("<p>No measurements were recorded.</p>")
    for comparison in sorted(comparisons, key=lambda c: c.tip):
        parts.append(f'<section id="{html.escape(comparison.tip)}">{comparison._repr_html_()}</section>')
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>Course report</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(page, encoding="utf-8")
    return out_path
