"""The course report: one HTML page with every measurement of a run, plus the executed notebooks.

``build_report`` reads the measurement records (``build/measurements.jsonl``), rebuilds each
comparison's table, verdicts and plot, puts the reference runs' figures for the same demo beside
them (``utils.references``), lists what only the references measured (GPU-only tips on a CPU
run), holds every source claim against all of it (``utils.claims``), and links the executed
notebooks rendered to HTML.
"""
from __future__ import annotations

import datetime
import html
from dataclasses import dataclass
from pathlib import Path

import nbformat

from . import claims, records, references
from .comparison import Comparison, group_records
from .device import env_report
from .present import Result
from .tables import STYLE, html_table
from .units import format_ratio


@dataclass
class NotebookRun:
    name: str
    seconds: float
    ok: bool
    html_path: Path | None = None
    error: str = ""


def _comparisons(all_records: list[records.Record]) -> list[Result]:
    return [Result.from_records(group) for group in group_records(all_records)]


def _runs_table(runs: list[NotebookRun], out_path: Path) -> str:
    rows = []
    for run in runs:
        link = (f'<a href="{html.escape(str(run.html_path.relative_to(out_path.parent)))}">{html.escape(run.name)}</a>'
                if run.html_path else html.escape(run.name))
        status = "ok" if run.ok else f'<span class="failed">FAILED</span> {html.escape(run.error)}'
        rows.append(f"<tr><td>{link}</td><td>{run.seconds:.1f} s</td><td>{status}</td></tr>")
    return ("<table><caption>Notebooks executed</caption><thead><tr><th>notebook</th><th>time</th>"
            "<th>status</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def slowest_cells(executed: list[Path], n: int = 10) -> list[dict[str, str]]:
    """The ``n`` code cells that ran longest across executed notebooks (papermill's per-cell
    ``duration``), slowest first: where a run's time goes, for anyone making it faster."""
    cells = []
    for path in executed:
        if not path.is_file():
            continue
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            seconds = cell.metadata.get("papermill", {}).get("duration")
            if cell.cell_type == "code" and isinstance(seconds, (int, float)):
                first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
                cells.append((float(seconds), path.stem, index, first))
    cells.sort(key=lambda c: -c[0])
    return [{"seconds": f"{seconds:.1f}", "notebook": name, "cell": str(index),
             "first line": first if len(first) <= 70 else first[:67] + "..."}
            for seconds, name, index, first in cells[:n]]


def _reference_only(comparisons: list[Comparison],
                    runs: list[references.ReferenceRun]) -> list[tuple[references.ReferenceRun, Comparison]]:
    """Reference comparisons with no counterpart in this run (e.g. GPU-only tips on a CPU)."""
    return [(run, ref) for run in runs for ref in sorted(run.comparisons, key=lambda c: c.tip)
            if not any(references.same_demo(ref.demo, mine.demo) for mine in comparisons)]


def _card(comparison: Comparison, stored: bool) -> str:
    """A comparison's card with its plot (the slow part of the report: ``build_report``'s map)."""
    return Result.of(comparison).to_html(stored=stored)


def _comparable(run: references.ReferenceRun, comparisons: list[Comparison]) -> list[Comparison]:
    """A reference run's comparisons that this run may be held against: those at the sizes this run's
    notebooks pick for the reference's device, plus those this run did not make (e.g. GPU-only)."""
    kept = []
    for ref in run.comparisons:
        mine = [c for c in comparisons if references.same_demo(c.demo, ref.demo)]
        if not mine or any(matched is ref for c in mine for _, matched in references.matching(c.demo)):
            kept.append(ref)
    return kept


def _factor(value: float | None) -> str:
    if value is None:
        return ""
    return "no new memory, " if value == float("inf") else f"{format_ratio(value)}, "


def _claims_section(comparisons: list[Comparison], runs: list[references.ReferenceRun]) -> str:
    sources = [("this run", comparisons)] + [(run.name, _comparable(run, comparisons)) for run in runs]
    rows = []
    for claim in claims.load():
        findings, overall = claims.evaluate(claim, sources)
        measured = "<br>".join(
            html.escape(f"{f.device_name} ({f.run}): {_factor(f.factor)}{f.verdict}"
                        + (f" ({f.reason})" if f.reason else "")) for f in findings) or "no measurement"
        rows.append(f"<tr><td>{claim.id}</td><td>{claim.tip}</td><td>{html.escape(claim.source)}</td>"
                    f"<td>{html.escape(claim.claim)}</td><td>{html.escape(claim.claimed())}"
                    f"{'<br><i>' + html.escape(claim.condition) + '</i>' if claim.condition else ''}</td>"
                    f"<td>{measured}</td><td><b>{html.escape(overall)}</b></td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("claim", "tip", "source", "what the source says", "claimed",
                                              "measured (device, run)", "verdict"))
    return (f'<h2 id="claims">Claims ledger</h2><p>Every speed or memory claim of the source write-ups '
            f'(<code>utils/claims.toml</code>) beside what was measured on each device: this run and the '
            f'reference runs. The claimed numbers are the sources\' words, not measurements.</p>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def build_report(records_path: Path, out_path: Path, runs: list[NotebookRun] = (),
                 lesson_shape: list[dict[str, str]] = (), slowest: list[dict[str, str]] = (), map_=map) -> Path:
    """Write the report page and return its path. ``lesson_shape``: the rows of
    ``benchmarks/lesson_shape.py`` for the executed notebooks, shown after the run times, as are
    the ``slowest`` cells (``slowest_cells``). ``map_`` draws the cards, a plot each (0.1-0.2 s):
    a process pool's map spreads them over the cores."""
    comparisons = _comparisons(records.load(records_path))
    reference_runs = references.load_runs()
    parts = ["<h1>PyTorch tips: measured on this machine</h1>",
             f"<p>Generated {datetime.datetime.now():%Y-%m-%d %H:%M}. Every figure below was measured by "
             f"the notebooks during this run or, where marked, by a named reference run; none is typed in.</p>",
             html_table([{"": k, "value": v} for k, v in env_report().items()], caption="Environment")]
    if runs:
        parts.append(_runs_table(runs, out_path))
    if slowest:
        parts.append(html_table(list(slowest), caption="The slowest cells of the run (papermill's durations)"))
    if lesson_shape:
        parts.append(html_table(list(lesson_shape), caption="How the lessons read (benchmarks/lesson_shape.py): "
                                "long cells, narration in code, words per comparison, explaining plots"))
    if reference_runs:
        parts.append(html_table([{"reference run": r.name, "what": r.describe(), "comparisons": len(r.comparisons)}
                                 for r in reference_runs], caption="Reference runs shipped with the course"))
    parts.append(f"<h2>Measurements ({len(comparisons)})</h2>")
    if not comparisons:
        parts.append("<p>No measurements were recorded.</p>")
    mine = sorted(comparisons, key=lambda c: c.tip)
    theirs = _reference_only(comparisons, reference_runs)
    cards = list(map_(_card, mine + [ref for _, ref in theirs], [False] * len(mine) + [True] * len(theirs)))
    parts += [f'<section id="{html.escape(c.tip)}">{card}</section>' for c, card in zip(mine, cards)]
    parts += [f'<section><p><b>Reference only</b> ({html.escape(run.describe(ref.device_name))}).</p>{card}</section>'
              for (run, ref), card in zip(theirs, cards[len(mine):])]
    parts.append(_claims_section(comparisons, reference_runs))
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>Course report</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(page, encoding="utf-8")
    return out_path
