"""How a measurement is shown: the recipe card under every comparison, sweep and timeline.

The one presentation layer of the toolkit. A card shows, by default, one headline generated from
the result ("channels_last: 1.47x as fast as NCHW on NVIDIA H100 (6.29 ms → 4.29 ms)"), the
explanation of that outcome (chosen from ``utils/why`` by the verdict), and a compact table. The
method, the per-variant caveats, the sources' claims, the reference runs and the bar chart sit
in a folded ``<details>`` block the learner opens on demand.

A card of a recorded comparison or sweep also carries its records, as ``records.MIME`` data beside
the HTML and the text (``_repr_mimebundle_``): no front end shows it, and the saved notebook keeps it.
"""
from __future__ import annotations

import dataclasses
import html
import math
from dataclasses import dataclass, field

from . import claims, plots, records, references, why
from .comparison import Comparison, Demo, Sweep, Timeline, Timing, fact_text
from .memory import memory_note
from .tables import html_table, text_table
from .units import first_sentence_words, format_bytes, format_number, format_ratio, format_seconds, format_sizes
from .verdict import (HOST_BOUND, Verdict, gpu_above_wall, gpu_change, launch_bound_reason, memory_verdict, ratio_words,
                      time_verdict)

CARD = "course-card"  # the class of every card's <div> (utils.lesson_shape counts them)
HEADLINE = "course-headline"  # the class of its headline's <span> (utils.lesson_shape counts its words)
HEADLINE_WORDS = 20  # a headline's first sentence at most
DETAILS = "Details"  # the method, caveats, every verdict, the claims, the reference runs, a chart


# ---------------------------------------------------------------- words from numbers

def headline(result: Comparison, row: Timing | None = None) -> str:
    """One sentence on the featured variant against the baseline, in the tip's own metric (time,
    peak memory, or a figure of its table), generated from the verdict: the longest of its forms that
    fits in ``HEADLINE_WORDS`` words (the table below it has the rest)."""
    row = row or result.featured()
    if result.metric == "memory" and memory_verdict(result, row) is not None:
        forms = _memory_forms(result, row)
    elif result.metric not in ("", "memory") and all(result.metric in r.extra for r in (result.baseline, row)):
        forms = _figure_forms(result, row, result.metric)
    else:
        forms = _time_forms(result, row)
    return fitted(forms)


def fitted(forms: list[str], words: int = HEADLINE_WORDS) -> str:
    """The first of ``forms`` (longest first) whose first sentence has at most ``words`` words."""
    return next((form for form in forms if first_sentence_words(form) <= words), forms[-1])


def _time_forms(result: Comparison, row: Timing) -> list[str]:
    base, verdict = result.baseline, time_verdict(result, row)
    on = f" on {result.device_name}"
    label = f", {HOST_BOUND}" if verdict.text.startswith(HOST_BOUND) else ""
    if verdict.clock == "GPU":   # judged on GPU time: its own times, the wall clock in the table
        times = f" ({format_seconds(base.device_s)} → {format_seconds(row.device_s)} of GPU work)"
        said = verdict.phrase
        return [f"{row.label}: {said} against {base.label}{on}{times}{label}.", f"{row.label}: {said}{on}{times}{label}.",
                f"{row.label}: {said}{times}{label}.", f"{row.label}: {said}{label}.", f"{row.label}: {said}."]
    times = f" ({format_seconds(base.median)} → {format_seconds(row.median)})"
    against = [f" as {base.label}", " as the baseline"]
    if verdict.kind == "faster":   # last, for a long label: the device is in the card's caption too
        return [f"{row.label}: {verdict.phrase}{a}{on}{t}{label}." for a in against for t in (times, "")] + \
            [f"{row.label}: {verdict.phrase} as the baseline{label}.", f"{row.label}: {verdict.phrase} as the baseline."]
    if verdict.kind == "slower":
        slow = format_ratio(row.median / base.median)
        return [f"{row.label}: {slow} the time{a.replace(' as', ' of')}{on}{t}{label}." for a in against
                for t in (times, "")] + [f"{row.label}: {slow} the time of the baseline{label}.",
                                         f"{row.label}: {slow} the time of the baseline."]
    if verdict.kind == "launch-bound":
        gpu = gpu_change(result, row)
        return [f"{row.label} against {base.label}{on}: launch-bound, so no verdict{'; ' + gpu if gpu else ''}.",
                f"{row.label}{on}: launch-bound, so no verdict.", f"{row.label}: launch-bound, so no verdict."]
    if verdict.kind == "one round":
        return [f"{row.label}: {verdict.text} against {base.label}{on}{times}; rerun in full mode for a verdict.",
                f"{row.label}: {verdict.text}{on}; rerun in full mode for a verdict.",
                f"{row.label}: {verdict.text}{on}, rerun for a verdict."]
    return [f"{row.label}: no clear difference from {base.label}{on}{t}{label}." for t in (times, "")] + \
        [f"{row.label}: no clear difference from the baseline{on}{label}.", f"{row.label}: no clear difference{on}.",
         f"{row.label}: no clear difference."]


def _time_brief(result: Comparison, row: Timing) -> str:
    """The time verdict in a few words, beside another metric's headline (the table has the rest)."""
    verdict = time_verdict(result, row)
    if verdict.kind == "slower" and verdict.clock == "wall":
        return f"{format_ratio(row.median / result.baseline.median)} the time"
    if verdict.kind == "no clear difference":
        return verdict.phrase.split(" (")[0]
    return verdict.phrase


def _memory_forms(result: Comparison, row: Timing) -> list[str]:
    base = result.baseline
    peaks = f"peak memory {format_bytes(row.peak_bytes)}, against {format_bytes(base.peak_bytes)}"
    time = f"; time: {_time_brief(result, row)}"
    return [f"{row.label}: {peaks} for {base.label}{time}.", f"{row.label}: {peaks}{time}.",
            f"{row.label}: {peaks}.",
            f"peak memory {format_bytes(row.peak_bytes)}, against the baseline's {format_bytes(base.peak_bytes)}."]


def _figure_forms(result: Comparison, row: Timing, name: str) -> list[str]:
    base = result.baseline
    figures = f"{name} {row.extra[name]}, against {base.extra[name]}"
    time = f"; time: {_time_brief(result, row)}"
    return [f"{row.label}: {figures} for {base.label}{time}.", f"{row.label}: {figures}{time}.",
            f"{row.label}: {figures}.", f"{name} {row.extra[name]}, against the baseline's {base.extra[name]}."]


def fields(result: Comparison, extra: dict | None = None) -> dict[str, str]:
    """The figures a ``utils/why`` sentence may name, as text: the standard ones below, then the
    comparison's sizes, then its facts, then ``extra`` (later names win)."""
    base, row = result.baseline, result.featured()
    verdict = time_verdict(result, row)
    ratio = verdict.ratio if verdict.clock == "GPU" and verdict.ratio else result.speedup(row)   # the judged clock's
    values = {"baseline": base.label, "variant": row.label, "device": result.device_name,
              "ratio": format_ratio(ratio), "slowdown": format_ratio(1 / ratio),
              "clock": "in GPU time" if verdict.clock == "GPU" else "on the wall clock",
              "baseline_time": format_seconds(base.median), "variant_time": format_seconds(row.median),
              "baseline_gpu": format_seconds(base.device_s), "variant_gpu": format_seconds(row.device_s),
              "baseline_peak": format_bytes(base.peak_bytes), "variant_peak": format_bytes(row.peak_bytes)}
    values.update(_other_sizes(result.sizes_spec))
    values.update({k: str(v) for k, v in result.sizes.items()})
    values.update(result.facts)
    values.update({k: fact_text(v) for k, v in (extra or {}).items()})
    return values


def _other_sizes(spec: dict | None) -> dict[str, str]:
    """``gpu_sizes`` and ``cpu_sizes``: what the demo uses on the other devices (only when its
    sizes come from ``bench.sizes``; a sentence naming them otherwise is an error, not a blank)."""
    return {f"{kind}_sizes": format_sizes(spec[kind]) for kind in ("gpu", "cpu") if spec and kind in spec}


def explanation(result: Comparison, extra: dict | None = None) -> list[str]:
    """The ``utils/why`` sentences for this outcome on this kind of device, filled in: the outcome
    of the tip's metric (the memory verdict for a memory tip, else the time verdict)."""
    return filled(result.why_key, "gpu" if result.on_gpu else "cpu", outcome_kind(result), fields(result, extra),
                  f"{result.tip} '{result.title}'")


def outcome_kind(result: Comparison) -> str:
    """The verdict kind that picks the explanation: memory's for a memory tip, time's otherwise."""
    row = result.featured()
    memory = memory_verdict(result, row) if result.metric == "memory" else None
    return memory.kind if memory else time_verdict(result, row).kind


def filled(key: str, device_kind: str, outcome: str, values: dict[str, str], what: str) -> list[str]:
    """The sentences of ``utils/why`` [key] for an outcome, their fields filled from ``values``; a
    sentence that names a figure ``what`` does not give is an error, not a blank."""
    sentences = []
    for template in why.templates(key, device_kind, outcome):
        missing = why.field_names(template) - set(values)
        if missing:
            raise ValueError(f"utils/why [{key}] asks for {sorted(missing)}, which {what} does not give; "
                             f"it gives {sorted(values)}")
        sentences.append(template.format_map(values))
    return sentences


def sentence(result: Comparison, row: Timing) -> str:
    """A variant's full verdict, its caveats and its memory against the baseline."""
    if row is result.baseline:
        return f"{row.label} is the baseline."
    parts = [str(time_verdict(result, row))]
    memory = memory_verdict(result, row)
    if memory:
        parts.append(str(memory))
    return f"{row.label}, against {result.baseline.label}: " + "; ".join(parts) + "."


_MEASURED: list[Comparison] = []   # this process's comparisons (a notebook's, in order), for claims judged beside others


def remember(result: Comparison) -> None:
    """Remember a comparison measured in this process: a claim bounded by another claim's gain
    (``below``) is judged against the comparisons measured beside it."""
    _MEASURED.append(result)


def claim_lines(result: Comparison) -> list[str]:
    """The sources' claims about this comparison, in plain words beside what was measured here
    (and, for a claim bounded by others, beside what this process measured on the same device)."""
    lines = []
    try:
        ledger = claims.load()
    except (OSError, ValueError):  # an unreadable ledger must not stop a notebook; tests check it
        return lines
    live = any(c is result for c in _MEASURED)
    beside = [c for c in _MEASURED if c is not result and c.device == result.device] if live else []
    for claim in ledger:
        found = claims.find_row(claim, [result])
        if not found:
            continue
        assessed = claims.assess(claim, [result, *beside], ledger)
        if assessed:
            _, factor, verdict, reason = assessed
            measured = "no new memory" if factor == math.inf else ratio_words(factor) if factor is not None else "-"
            if claim.metric == "time" and factor is not None and time_verdict(*found).clock == "GPU":
                measured += " in GPU time"
            condition = f" ({claim.condition})" if claim.condition else ""
            lines.append(f"{source_name(claim.source).capitalize()} reports {claim.claimed()}{condition}; "
                         f"here: {measured}, {verdict}{f' ({reason})' if reason else ''}.")
    return lines


def source_name(source: str) -> str:
    """'000#2' -> 'source write-up 000 (item 2)': the sources are listed in SOURCES.md."""
    number, _, item = source.partition("#")
    return f"source write-up {number}" + (f" (item {item})" if item else "")


def footnote(result: Comparison) -> str:
    """How to read the table: rounds, what 'GPU time' and 'peak memory' count."""
    rounds = len(result.baseline.round_medians)
    notes = [f"median and IQR over {rounds} interleaved round{'s' * (rounds != 1)}"]
    if any(r.device_s is not None for r in result.rows):
        merged = all(r.device_merged for r in result.rows if r.device_s is not None)
        notes.append(f"GPU time: {'busy time per call (kernels and copies, overlaps counted once)' if merged else 'kernel and copy time per call, each in full'} from torch.profiler")
    notes += [memory_note(m) for m in sorted({r.memory_method for r in result.rows if r.memory_method})]
    return "; ".join(notes) + "."


def caption(result: Comparison) -> str:
    sizes = format_sizes(result.sizes)
    return f"{result.tip}: {result.title} on {result.device_name}" + (f" ({sizes})" if sizes else "")


# ---------------------------------------------------------------- tables

def table_rows(result: Comparison, compact: bool = False) -> list[dict[str, str]]:
    """The comparison as rows. Compact: time, verdict, GPU time on a GPU, and peak memory only when
    it differs between variants. Full: median, IQR, runs, every figure, and the verdict's caveats."""
    gpu_time = any(r.device_s is not None for r in result.rows)
    memory = any(r.peak_bytes is not None for r in result.rows)
    about_memory = compact and result.metric == "memory" and memory
    if compact and not about_memory:
        memory = any(v is not None and v.kind != "same memory"
                     for v in (memory_verdict(result, r) for r in result.rows[1:]))
    rows = []
    for row in result.rows:
        cells = {"variant": row.label}
        if about_memory:  # a memory tip: its metric first, and the verdict on it
            cells["peak memory"] = format_bytes(row.peak_bytes)
        cells["median"] = format_seconds(row.median)
        if not compact:
            cells.update({"IQR": format_seconds(row.iqr), "runs": str(row.runs),
                          "speed-up": format_ratio(result.speedup(row))})
        if gpu_time:
            cells["GPU time"] = format_seconds(row.device_s)
        if memory and not about_memory:
            cells["peak memory"] = format_bytes(row.peak_bytes)
        cells.update({k: str(v) for k, v in row.extra.items()})
        verdict = time_verdict(result, row)
        cells["verdict"] = (_memory_brief(result, row) if about_memory else _compact(verdict) if compact
                            else str(verdict))
        rows.append(cells)
    return rows


def _compact(verdict: Verdict) -> str:
    """A verdict for the compact table: "no clear difference (1.20x as fast)", the reason (runs
    overlap, rounds disagree) left to the full table in the details."""
    if verdict.kind == "no clear difference" and ", " in verdict.text:
        return verdict.text.split(", ")[0] + ")"
    return verdict.text


def _memory_brief(result: Comparison, row: Timing) -> str:
    """The memory verdict in a few words, for a memory tip's table."""
    verdict = memory_verdict(result, row)
    if verdict is None:
        return "baseline" if row is result.baseline else "-"
    if verdict.kind == "same memory":
        return "same peak"
    if not result.baseline.peak_bytes:
        return "more memory"
    return f"{row.peak_bytes / result.baseline.peak_bytes:.0%} of the baseline's peak"


def reference_table(result: Comparison) -> str:
    """This run beside each reference run of the same demo at the sizes the notebook uses there."""
    found = references.matching(result.demo)
    if not found:
        return ""
    rows = []
    for i, row in enumerate(result.rows):
        cells = {"variant": row.label, f"here: {result.device_name}": _speed(result, row)}
        for run, ref in found:
            cells[f"{run.describe(ref.device_name)} ({format_sizes(ref.sizes) or 'no sizes'})"] = _speed(ref, ref.rows[i])
        rows.append(cells)
    return html_table(rows, caption=f"{result.tip}: this run beside the reference runs")


def reference_lines(demo: Demo, label: str, named: bool = False, here: str | None = None) -> list[str]:
    """What the newest reference run on each device measured for the variant ``label`` (the
    details list every run); ``named``: say which variant (where no table names it). With ``here``,
    this run's verdict kind: only the runs whose verdict differs (the ones that agree add nothing
    to the card: they go to its details)."""
    newest = {}
    for run, ref in sorted(references.matching(demo), key=lambda found: (found[0].manifest.get("date", ""), found[0].name)):
        newest[ref.device_name] = (run, ref)
    return [f"On {_where(run, ref)}: {f'{label}, ' if named else ''}{_speed(ref, ref.row(label), short=True)}."
            for run, ref in newest.values()
            if here is None or time_verdict(ref, ref.row(label)).kind != here]


def _where(run, ref: Comparison) -> str:
    """Where a reference run measured: its GPU, or the CPU of the machine it ran on (not this one's)."""
    if ref.device.startswith("cpu"):
        return f"reference run {run.name}'s host, {ref.device_name}"
    return f"{ref.device_name} (reference run {run.name})"


def _speed(result: Comparison, row: Timing, short: bool = False) -> str:
    if row is result.baseline:
        return "baseline"
    if not row.round_medians:
        return f"{format_ratio(result.speedup(row))} (recorded before per-round verdicts: no verdict)"
    verdict = time_verdict(result, row).text
    return verdict if short else f"{format_ratio(result.speedup(row))}, {verdict}"


# ---------------------------------------------------------------- HTML

def _paragraphs(lines: list[str], small: bool = False) -> str:
    style = ' style="font-size:.85em;color:#555"' if small else ""
    return "".join(f"<p{style}>{html.escape(line)}</p>" for line in lines if line.strip())


def details_html(summary: str, body: str) -> str:
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def card_html(title: str, head: str, lines: list[str], table: str, visible: str = "", details: str = "") -> str:
    """The card: a bold title and headline, the explanation, the table, a figure, the folded rest."""
    top = (f'<p><b>{html.escape(title)}</b> · <span class="{HEADLINE}">{html.escape(head)}</span></p>' if head
           else f"<p><b>{html.escape(title)}</b></p>")
    return (f'<div class="{CARD}">{top}{_paragraphs(lines)}{table}{visible}'
            f"{details_html(DETAILS, details) if details else ''}</div>")


@dataclass(repr=False)
class Result(Comparison):
    """A comparison as a notebook shows it (``bench.compare`` returns one): a card in Jupyter, text
    elsewhere. ``records``: what ``bench.compare`` recorded of it (none when it recorded nothing)."""
    records: list[records.Record] = field(default_factory=list, compare=False)

    @classmethod
    def of(cls, comparison: Comparison) -> "Result":
        """A stored comparison (a record group, a reference run's) made showable."""
        return cls(**{f.name: getattr(comparison, f.name) for f in dataclasses.fields(Comparison)})

    @classmethod
    def recorded(cls, group: list[records.Record]) -> "Result":
        """The card of records this run wrote in another process (a torchrun rank): unlike
        ``from_records`` (a reference run's, say), it carries them into the notebook as its own."""
        result = cls.from_records(group)
        result.records = list(group)
        return result

    def verdict(self, row: Timing | str, against: Timing | str | None = None) -> Verdict:
        """The speed verdict of a variant (a row or its label) against the baseline or ``against``."""
        return time_verdict(*self.pair(row, against))

    def memory_verdict(self, row: Timing | str, against: Timing | str | None = None) -> Verdict | None:
        """The peak-memory verdict of a variant, or None when memory was not measured."""
        return memory_verdict(*self.pair(row, against))

    def launch_bound(self) -> str | None:
        """Why this comparison measures kernel launches rather than the tip (CUDA), or None."""
        return launch_bound_reason(self)

    def headline(self) -> str:
        return headline(self)

    def explanation(self) -> list[str]:
        return explanation(self)

    def footnote(self) -> str:
        return footnote(self)

    def summary(self) -> str:
        """Every variant's full verdict, one sentence each."""
        return "\n".join(sentence(self, row) for row in self.rows[1:])

    def caption(self) -> str:
        return caption(self)

    def table_rows(self, compact: bool = False) -> list[dict[str, str]]:
        return table_rows(self, compact)

    def details(self, with_references: bool = True) -> str:
        """The folded rest: the full table, how it was measured, every variant's verdict, the GPU-time
        caveat, the sources' claims, the reference runs and the bar chart."""
        notes = [footnote(self), gpu_above_wall(self)]
        return (html_table(table_rows(self), caption=caption(self)) + _paragraphs(notes, small=True)
                + _paragraphs(self.summary().splitlines() + claim_lines(self), small=True)
                + (reference_table(self) if with_references else "")
                + plots.figure_html(plots.comparison_figure(self), "bars"))

    def references_differing(self) -> list[str]:
        """The newest reference runs whose verdict on the featured variant differs from this run's."""
        row = self.featured()
        return reference_lines(self.demo, row.label, here=time_verdict(self, row).kind)

    def to_html(self, stored: bool = False) -> str:
        """The card. ``stored``: a reference run's comparison, shown with its numbers only (no
        explanation: older runs recorded no facts; no references: it is one)."""
        lines = [] if stored else self.explanation() + self.references_differing()
        return card_html(f"{self.tip} · {self.title}", self.headline(), lines,
                         html_table(table_rows(self, compact=True)), details=self.details(not stored))

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """The records, beside the HTML and text IPython takes from the other ``_repr_*`` methods."""
        return records.bundle(self.records) if self.records else {}

    def __repr__(self) -> str:
        return "\n".join([f"{self.tip} · {self.title}: {self.headline()}", *self.explanation(),
                          *self.references_differing(), text_table(table_rows(self, compact=True))])


def _brief(result: Comparison) -> str:
    """A sweep point's verdict in a few words, as its table row judges it: a ratio only where the
    point has a speed verdict."""
    verdict = time_verdict(result, result.featured())
    if verdict.kind == "no clear difference":
        return verdict.text.split(" (")[0]
    return verdict.text


@dataclass(repr=False)
class SweepResult(Sweep):
    """A sweep as a notebook shows it: a headline of the ratios by size, the explanation of the
    outcome at the largest size, a compact table and the curves."""

    @property
    def last(self) -> Result:
        return self.comparisons[-1]

    def headline(self) -> str:
        """The verdict at every point or, where that is too long, at the two ends of the sweep."""
        first, last = self.comparisons[0], self.comparisons[-1]
        base, row, on = first.baseline.label, first.featured().label, f" on {first.device_name}"
        points = ", ".join(f"{_brief(c)} at {v}" for v, c in zip(self.values, self.comparisons))
        at = f"{self.over}=" if " " not in self.over else f"{self.over} "   # "at d=2", "at matrix width 256"
        ends = f"{_brief(first)} at {at}{self.values[0]}, {_brief(last)} at {self.values[-1]}"
        return fitted([f"{row} against {base}{on}, by {self.over}: {points}.", f"{row}{on}, by {self.over}: {points}.",
                       f"{row}{on}: {ends}.", f"{row}: {ends}."])

    def table_rows(self) -> list[dict[str, str]]:
        rows = []
        for value, comparison in zip(self.values, self.comparisons):
            cells = {self.over: str(value)}
            for row in comparison.rows:
                cells[row.label] = (f"{format_number(self.rate.of(value, row.median))} {self.rate.unit}" if self.rate
                                    else format_seconds(row.median))
            cells["verdict"] = time_verdict(comparison, comparison.featured()).text
            rows.append(cells)
        return rows

    def explanation(self) -> list[str]:
        return explanation(self.last, {self.over: self.values[-1]})

    def to_html(self) -> str:
        caveat = gpu_above_wall(*((f"at {self.over} {v}", c) for v, c in zip(self.values, self.comparisons)))
        details = _paragraphs([footnote(self.last), caveat] + claim_lines(self.last), small=True)
        return card_html(f"{self.tip} · {self.title}", self.headline(), self.explanation(),
                         html_table(self.table_rows()), plots.figure_html(plots.sweep_figure(self), "sweep"), details)

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        recorded = [r for c in self.comparisons for r in getattr(c, "records", [])]
        return records.bundle(recorded) if recorded else {}

    def __repr__(self) -> str:
        return "\n".join([f"{self.tip} · {self.title}: {self.headline()}", *self.explanation(),
                          text_table(self.table_rows())])


@dataclass(repr=False)
class TimelineResult(Timeline):
    """A timeline as a notebook shows it: one figure, lanes per variant."""

    def to_html(self) -> str:
        return card_html(f"{self.tip} · {self.title}", f"what ran when, during one call, on {self.device_name}", [],
                         "", plots.figure_html(plots.timeline_figure(self), "timeline"))

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        lanes = {}
        for span in self.spans:
            lanes[(span.variant, span.lane)] = lanes.get((span.variant, span.lane), 0.0) + span.end - span.start
        return "\n".join([f"{self.tip} · {self.title} on {self.device_name}"]
                         + [f"{variant}, {lane}: busy {format_seconds(busy)}" for (variant, lane), busy in lanes.items()])


@dataclass(repr=False)
class Unmeasured:
    """A demo this device cannot run (``bench.Options(needs="cuda")`` elsewhere): what it
    would measure, the reference runs that did, and nothing made up."""
    demo: Demo
    device_name: str
    device_kind: str   # "cpu" or "gpu": which sentences of utils/why apply
    needs: str
    why: str = ""
    facts: dict = field(default_factory=dict)
    featured: str = ""  # the variant a reference run's line is about ("" for a sweep: no line)

    def headline(self) -> str:
        return f"not measured: this demo needs {NEEDS[self.needs]}, and this run is on {self.device_name}."

    def explanation(self) -> list[str]:
        values = {"device": self.device_name, **_other_sizes(self.demo.sizes_spec),
                  **{k: str(v) for k, v in self.demo.sizes.items()}, **{k: fact_text(v) for k, v in self.facts.items()}}
        return filled(self.why or self.demo.tip, self.device_kind, "unmeasured", values, "an unmeasured demo")

    def lines(self) -> list[str]:
        return self.explanation() + (reference_lines(self.demo, self.featured, named=True) if self.featured else [])

    def to_html(self) -> str:
        found = references.matching(self.demo)
        details = "".join(html_table(table_rows(Result.of(ref), compact=True), caption=run.describe(ref.device_name))
                          for run, ref in found)
        return card_html(f"{self.demo.tip} · {self.demo.title}", self.headline(), self.lines(), "", details=details)

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        return "\n".join([f"{self.demo.tip} · {self.demo.title}: {self.headline()}", *self.lines()])


NEEDS = {"cuda": "a CUDA GPU", "gpu": "a GPU (CUDA or Apple MPS)"}
