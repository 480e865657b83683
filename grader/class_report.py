"""The class device report: what the class measured, and on which devices.

    python -m grader class-report --course-dir DIR [--also-from SHARD_DIR ...] [--db-url URL] [--out DIR/class_report]

The submissions are the gradebook's (SQLite or PostgreSQL, one grader or a sharded class); each
one's notebook is read from ``DIR/submitted/<student>/<assignment>/`` (else ``DIR/autograded/``),
else from the same places in each ``--also-from`` folder (the other shards' course directories),
by ``class_records``, as untrusted data: a missing file is counted, a rejected record is counted
by its reason. Written to the output folder:

- ``class_report.html``: for each tip and comparison, each device model's median speed-up across
  the learners who measured it, the middle half of their speed-ups and how many they were, beside
  the course's reference runs and the sources' claims, with a plot across devices; the devices the
  class used and each notebook's QUICK and full runs; the rejected records. No student id on it,
  and no figure of fewer than ``MIN_LEARNERS`` learners (``--min-learners``): a device model one
  learner used would show that learner's figures to anyone who knows whose device it is. Such a
  row says how many learners measured it, and nothing more.
- ``students.html``: for the instructor, each learner's submissions with their devices and runs.
- ``class_records.csv``: every accepted record, one row each, with its student and assignment.

A learner counts once per comparison and device: their first record of it, in assignment order.
"""
from __future__ import annotations

import csv
import html
import json
import statistics
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from utils import claims, plots, references
from utils.comparison import Comparison, group_records
from utils.records import Record
from utils.tables import STYLE, html_table
from utils.units import format_ratio

from . import class_records, database
from .coursedir import CourseDir
from .errors import CourseError

PAGE, STUDENTS, CSV = "class_report.html", "students.html", "class_records.csv"
TREES = ("submitted", "autograded")
MISSING = "submission file missing"
MAX_PLOTTED = 8        # device models in one plot: those most learners used
MAX_ROWS_PLOTTED = 24  # variants (and sweep points) in one plot: its first
MAX_PLOTS = 200        # plots on the page: of the comparisons most learners measured (a notebook may hold
                       # thousands of made-up comparisons; the course has about 100)
PARALLEL_FROM = 64     # submissions: fewer are read in this process
MIN_LEARNERS = 3       # a figure on the class page aggregates at least this many learners
CSV_FIELDS = ("student", "assignment", "tip", "title", "comparison", "variant", "role", "device", "device_name",
              "variant_device", "variant_device_name", "quick", "torch", "median_s", "q1_s", "q3_s", "iqr_s",
              "runs", "speedup", "peak_bytes", "device_s", "sizes", "notebook")


@dataclass
class Submission:
    student: str
    assignment: str
    tree: str = ""                 # where its notebook was read: "submitted", "autograded"; "" = no file
    records: list[Record] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)

    @property
    def mode(self) -> str:
        modes = {r.quick for r in self.records}
        return {frozenset(): "", frozenset({True}): "QUICK", frozenset({False}): "full"}.get(frozenset(modes), "both")


# ---------------------------------------------------------------- gathering

def listed(course_dir: CourseDir) -> list[tuple[str, str]]:
    """(student, assignment) of every submission the gradebook holds, sorted."""
    from nbgrader.api import Assignment, SubmittedAssignment

    with database.gradebook(course_dir) as gb:
        rows = (gb.db.query(SubmittedAssignment.student_id, Assignment.name)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id).all())
    return sorted((str(s), str(a)) for s, a in rows)


def read(roots: tuple[Path, ...], student: str, assignment: str, tips: set[str]) -> Submission:
    """One submission's records, from the first course folder and tree that has its notebook."""
    for root in roots:
        for tree in TREES:
            path = Path(root) / tree / student / assignment / f"{assignment}.ipynb"
            if path.exists():
                found = class_records.read(path, tips)
                return Submission(student, assignment, tree, found.records, found.rejected)
    return Submission(student, assignment)


def _read_all(jobs: list[tuple]) -> list[Submission]:
    return [read(*job) for job in jobs]


def gather(course_dir: CourseDir, workers: int = 1, also: tuple[Path, ...] = ()) -> list[Submission]:
    """Every submission the gradebook lists, read from the course folder or, in a sharded class,
    from the other shards' folders ``also`` (``workers`` processes)."""
    folders = (course_dir.path, *also)
    for folder in folders:
        if not Path(folder).is_dir():
            raise CourseError(f"{folder} is not a course directory (no such folder)")
    tips = class_records.course_tips()
    jobs = [(folders, student, assignment, tips) for student, assignment in listed(course_dir)]
    if workers < 2 or len(jobs) < PARALLEL_FROM:
        return _read_all(jobs)
    chunks = [jobs[i::workers * 4] for i in range(workers * 4)]
    with ProcessPoolExecutor(workers) as pool:
        done = [s for part in pool.map(_read_all, chunks) for s in part]
    order = {(s, a): i for i, (_, s, a, _) in enumerate(jobs)}
    return sorted(done, key=lambda sub: order[sub.student, sub.assignment])


# ---------------------------------------------------------------- aggregates

Device = tuple[str, bool]   # (device model, QUICK)


@dataclass
class Demo:
    """One comparison of the course (a tip and title) as the class measured it. A sweep measures it
    at several sizes: the sizes that vary on one device (``swept``) label its rows."""
    tip: str
    title: str
    learners: dict[Device, dict[str, dict[str, Comparison]]] = field(default_factory=dict)  # device -> student -> sizes -> theirs

    def comparisons(self, device: Device | None = None) -> list[Comparison]:
        return [c for d, by in self.learners.items() if device in (None, d) for mine in by.values() for c in mine.values()]

    def devices(self) -> list[Device]:
        """Most learners first."""
        return sorted(self.learners, key=lambda d: (-len(self.learners[d]), d))

    def baseline(self) -> str:
        return self.comparisons()[0].baseline.label

    def swept(self) -> list[str]:
        keys = set()
        for device in self.learners:
            values: dict[str, set] = {}
            for sizes in {_json(c.sizes): c.sizes for c in self.comparisons(device)}.values():
                for key in sizes:
                    values.setdefault(key, set()).add(_json(sizes[key]))
            keys |= {k for k, seen in values.items() if len(seen) > 1}
        return sorted(keys)

    @staticmethod
    def label(comparison: Comparison, variant: str, swept: list[str]) -> str:
        point = ", ".join(f"{k}={comparison.sizes[k]}" for k in swept if k in comparison.sizes)
        return f"{variant} at {point}" if point else variant

    def speedups(self, device: Device, swept: list[str] | None = None) -> dict[str, list[float]]:
        """Row label -> each learner's speed-up on ``device`` (one per learner), in student order."""
        swept, found = self.swept() if swept is None else swept, {}
        for mine in self.learners[device].values():
            theirs = {}
            for comparison in mine.values():
                for row in comparison.rows[1:]:
                    theirs.setdefault(self.label(comparison, row.label, swept), comparison.speedup(row))
            for label, value in theirs.items():
                found.setdefault(label, []).append(value)
        return found


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def demos(subs: list[Submission]) -> list[Demo]:
    """Every comparison the class measured, by tip: each learner's first at each sizes on each device."""
    found: dict[tuple[str, str], Demo] = {}
    for sub in subs:
        for group in group_records(sub.records):
            c = Comparison.from_records(group)
            demo = found.setdefault((c.tip, c.title), Demo(c.tip, c.title))
            mine = demo.learners.setdefault((c.device_name, c.quick), {}).setdefault(sub.student, {})
            mine.setdefault(_json(c.sizes), c)
    return sorted(found.values(), key=lambda d: (d.tip, d.title))


@dataclass(frozen=True)
class Spread:
    n: int
    median: float
    q1: float
    q3: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
        return cls(len(values), statistics.median(values), q1, q3, min(values), max(values))


def matched_references(demo: Demo) -> list[tuple[references.ReferenceRun, Comparison]]:
    """The reference runs' measurements of this demo at the sizes the learners' notebooks picked for
    the reference's device (``references.matching``), each run once."""
    found = {}
    for device in demo.devices():
        comparison = demo.comparisons(device)[0]
        try:
            pairs = references.matching(comparison.demo)
        except (KeyError, TypeError, AttributeError):  # a record's sizes_spec is the learner's data
            continue
        for run, ref in pairs:
            found.setdefault(run.name, (run, ref))
    return list(found.values())


def _device(device: Device) -> str:
    return f"{device[0]} ({'QUICK' if device[1] else 'full'})"


def _reference_label(run: references.ReferenceRun) -> str:
    return f"reference run {run.name} ({run.manifest.get('device_name', '?')}, {'QUICK' if run.quick else 'full'})"


def _assessed(claim: claims.Claim, comparisons: list[Comparison], ledger: list[claims.Claim]) -> str:
    try:
        found = claims.assess(claim, comparisons, ledger)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):  # sizes are the learner's data
        return claims.NOT_MEASURABLE
    return found[2] if found else "not measured"


# ---------------------------------------------------------------- the pages

def _withheld(device: Device, variant: str, learners: int, least: int) -> dict:
    return {"device": device[0], "mode": "QUICK" if device[1] else "full", "variant": variant, "learners": learners,
            "median speed-up": f"not shown: fewer than {least} learners"}


def _demo_html(demo: Demo, index: int, ledger: list[claims.Claim], plot: bool = True,
               least: int = MIN_LEARNERS) -> str:
    refs, swept, rows, series = matched_references(demo), demo.swept(), [], {}
    for device in demo.devices():
        if len(demo.learners[device]) < least:   # a device model too few learners used: a count, no figures
            rows.append(_withheld(device, "every variant", len(demo.learners[device]), least))
            continue
        for label, values in demo.speedups(device, swept).items():
            if len(values) < least:
                rows.append(_withheld(device, label, len(values), least))
                continue
            spread = Spread.of(values)
            rows.append({"device": device[0], "mode": "QUICK" if device[1] else "full", "variant": label,
                         "learners": spread.n, "median speed-up": format_ratio(spread.median),
                         "middle half": f"{format_ratio(spread.q1)} to {format_ratio(spread.q3)}",
                         "range": f"{format_ratio(spread.low)} to {format_ratio(spread.high)}"})
            plotted = len(series) < MAX_PLOTTED or _device(device) in series
            if plotted and len({*series.get(_device(device), ()), label}) <= MAX_ROWS_PLOTTED:
                series.setdefault(_device(device), {})[label] = (spread.median, spread.q1, spread.q3)
    reference_series = {}
    for run, ref in refs:
        for row in ref.rows[1:]:
            label = demo.label(ref, row.label, swept)
            rows.append({"device": run.manifest.get("device_name", "?"), "mode": "QUICK" if run.quick else "full",
                         "variant": label, "learners": f"reference run {run.name}",
                         "median speed-up": format_ratio(ref.speedup(row))})
            if len(reference_series.get(_reference_label(run), ())) < MAX_ROWS_PLOTTED:
                reference_series.setdefault(_reference_label(run), {})[label] = ref.speedup(row)
    parts = [f'<section id="demo-{index}" data-tip="{html.escape(demo.tip)}"><h3>{html.escape(demo.tip)}: '
             f'{html.escape(demo.title)}</h3>',
             html_table(rows, caption=f"Speed-up over {demo.baseline()}, by device: the median learner's, the middle "
                                      "half and the range of the learners'; the course's reference runs below"),
             _claims_html(demo, refs, ledger, least)]
    if not plot:
        parts.append(f"<p>Not plotted: the page plots the {MAX_PLOTS} comparisons most learners measured.</p>")
    elif series or reference_series:
        figure = plots.class_figure(f"{demo.tip}: {demo.title}", series, reference_series)
        parts.append(plots.figure_html(figure, "devices"))
    return "".join(parts) + "</section>"


def _claims_html(demo: Demo, refs: list, ledger: list[claims.Claim], least: int = MIN_LEARNERS) -> str:
    rows = []
    for claim in ledger:
        if (claim.measure.get("tip"), claim.measure.get("title")) != (demo.tip, demo.title):
            continue
        verdicts = []
        for device in demo.devices():
            if len(demo.learners[device]) < least:
                verdicts.append(f"{_device(device)}: {len(demo.learners[device])} learner(s), not shown")
                continue
            counts = Counter(_assessed(claim, list(mine.values()), ledger) for mine in demo.learners[device].values())
            verdicts.append(f"{_device(device)}: " + ", ".join(f"{k} {n}" for k, n in counts.most_common())
                            + f" (of {sum(counts.values())} learners)")
        verdicts += [f"{_reference_label(run)}: {_assessed(claim, [ref], ledger)}" for run, ref in refs]
        rows.append({"claim": claim.id, "source": claim.source, "what the source says": claim.claim,
                     "claimed": claim.claimed(), "in the class, by device": "; ".join(verdicts)})
    return html_table(rows, caption="The sources' claims (utils/claims.toml) held against each learner's "
                                    "measurement and the reference runs") if rows else ""


def _inventory(subs: list[Submission]) -> str:
    devices: dict[tuple[str, str], set] = {}
    for sub in subs:
        for r in sub.records:
            ran_on = r.runs_on.split(":")[0]
            kind = "CPU" if ran_on == "cpu" else f"GPU ({ran_on})"
            name = (r.variant_device_name or r.device_name) if r.variant_device else r.device_name
            devices.setdefault((kind, name), set()).add(sub.student)
    device_rows = [{"kind": kind, "device": name, "learners": len(students)}
                   for (kind, name), students in sorted(devices.items(), key=lambda kv: (kv[0][0], -len(kv[1]), kv[0][1]))]
    modes: dict[str, Counter] = {}
    for sub in subs:
        modes.setdefault(sub.assignment, Counter())[sub.mode or ("no records" if sub.tree else "file missing")] += 1
    mode_rows = [{"notebook": a, "learners: QUICK": c["QUICK"], "full": c["full"], "both": c["both"],
                  "no records": c["no records"], "file missing": c["file missing"]} for a, c in sorted(modes.items())]
    return ("<h2 id='devices'>Devices</h2>"
            + html_table(device_rows, caption="The CPUs and GPUs the class measured on (a learner counts once per device)")
            + html_table(mode_rows, caption="Each notebook's submissions, by the mode the learner ran it in"))


def rejections(subs: list[Submission]) -> Counter:
    total = Counter()
    for sub in subs:
        total.update(sub.rejected)
        total[MISSING] += not sub.tree
    return +total


def _page(title: str, parts: list[str]) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>")


def report_page(subs: list[Submission], least: int = MIN_LEARNERS) -> str:
    """The class page: aggregates of at least ``least`` learners only, no student id."""
    if least < 1:
        raise ValueError(f"the class page needs at least 1 learner per figure, got {least}")
    students = {s.student for s in subs}
    found = demos(subs)
    parts = [f"<h1>The class's measurements</h1><p>{len(subs)} submission(s) from {len(students)} learner(s); "
             f"{sum(len(s.records) for s in subs)} record(s) accepted from {sum(bool(s.records) for s in subs)} "
             f"submission(s), {len(found)} comparison(s). Every figure was measured by a learner's notebook or by "
             "a named reference run of the course; records are the learners' own data, checked for consistency "
             f"but not for honesty. A figure is shown only where at least {least} learner(s) measured it.</p>"]
    if not subs:
        parts.append("<p class='failed'>The gradebook lists no submissions: nothing to report.</p>")
    parts.append(_inventory(subs))
    rejected = rejections(subs)
    parts.append("<h2 id='rejected'>Records left out</h2>" + (html_table(
        [{"reason": k, "count": n} for k, n in sorted(rejected.items(), key=lambda kv: (-kv[1], kv[0]))],
        caption="Records refused by reason (a notebook refused whole counts once); submissions whose file is "
                "missing") if rejected else "<p>None.</p>"))
    parts.append(f"<h2 id='comparisons'>Comparisons ({len(found)})</h2>")
    if not found:
        parts.append("<p>No submission carries measurements.</p>")
    ledger = claims.load()
    measured_by = {id(d): len({s for by in d.learners.values() for s in by}) for d in found}
    plotted = {id(d) for d in sorted(found, key=lambda d: -measured_by[id(d)])[:MAX_PLOTS]}
    parts += [_demo_html(demo, i, ledger, id(demo) in plotted, least) for i, demo in enumerate(found)]
    return _page("Class device report", parts)


def students_page(subs: list[Submission]) -> str:
    """For the instructor: each learner's submissions, devices and runs."""
    rows = []
    for sub in subs:
        names = sorted({r.device_name for r in sub.records} | {r.variant_device_name for r in sub.records} - {""})
        rows.append({"student": sub.student, "assignment": sub.assignment, "file": sub.tree or "missing",
                     "devices": "; ".join(names), "mode": sub.mode, "records": len(sub.records),
                     "torch": ", ".join(sorted({r.torch for r in sub.records})),
                     "left out": "; ".join(f"{k} {n}" for k, n in sorted(sub.rejected.items()))})
    return _page("Class device report: learners", [
        "<h1>The class's measurements, by learner</h1><p>For the instructor: this page names students.</p>",
        html_table(rows, caption="Each submission: where its notebook was read, the devices its records name, "
                                 "the mode, the records accepted and those left out")])


def _cell(value):
    """A CSV cell a spreadsheet shows as text: a learner's string starting with = + - @ is no formula."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def write_csv(subs: list[Submission], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for sub in subs:
            for record in sub.records:
                row = {**asdict(record), "student": sub.student, "assignment": sub.assignment,
                       "sizes": json.dumps(record.sizes, sort_keys=True)}
                writer.writerow({k: _cell(row[k]) for k in CSV_FIELDS})


def write(subs: list[Submission], out: Path, least: int = MIN_LEARNERS) -> list[Path]:
    """The two pages and the CSV, in ``out``; returns their paths. ``least``: the fewest learners a
    figure of the class page aggregates (the learners' page and the CSV keep every record)."""
    page = report_page(subs, least)
    out.mkdir(parents=True, exist_ok=True)
    (out / PAGE).write_text(page, encoding="utf-8")
    (out / STUDENTS).write_text(students_page(subs), encoding="utf-8")
    write_csv(subs, out / CSV)
    return [out / PAGE, out / STUDENTS, out / CSV]
