"""Honest timing (T005) and side-by-side comparison of a baseline and a tip.

Built on ``torch.utils.benchmark.Timer``: it warms up, synchronizes CUDA around every
block of runs, picks a block size so timer overhead is negligible, and reports the median
and interquartile range (IQR, from the 25th to the 75th percentile) of many runs. Variants are measured in interleaved rounds
(baseline, tip, baseline, tip, ...) so that a burst of background load hits both sides, and
the per-round medians let a verdict check that the ranking held in every round.

On CUDA each variant is also run once more under ``torch.profiler`` to read how much GPU
kernel time a call really contains: a comparison with too little GPU work measures Python
and kernel launches, and ``utils.verdict`` says so instead of judging the tip.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import uuid
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import torch

from . import records, verdict
from .device import device_name
from .memory import format_bytes, memory_note, peak_memory

if TYPE_CHECKING:  # imported on first use: it pulls in cpp_extension and setuptools (~0.1 s per kernel start)
    from torch.utils import benchmark

# Each variant is timed for min_run_time per round, in blocks of ~1/BLOCKS_PER_ROUND of it.
# We size blocks ourselves: Timer.blocked_autorange grows the block by 10x steps until timer
# overhead is below 1e-4, which on short runs leaves one or two samples and no usable IQR.
# QUICK keeps two rounds: a verdict needs the ranking to hold in more than one round.
QUICK = {"min_run_time": 0.05, "rounds": 2, "quick": True}
FULL = {"min_run_time": 0.3, "rounds": 3, "quick": False}
BLOCKS_PER_ROUND = 20
MIN_BLOCK_S = 1e-3  # timer and sync overhead is a few µs: well under 1% of a block
PROFILED_CALLS = 3  # calls profiled per variant on CUDA to read its GPU kernel time
_settings = dict(FULL)


def configure(quick: bool) -> None:
    """QUICK mode (CI, first look) measures briefly; full mode measures longer and in more rounds."""
    _settings.update(QUICK if quick else FULL)


def is_quick() -> bool:
    return bool(_settings["quick"])


class Sizes(dict):
    """The sizes a demo uses on this device, plus the sizes it would use on the others.

    Behaves as a plain dict of the current sizes; ``spec`` keeps every device's choice so a
    record can say which sizes a reference GPU run must have used to be comparable.
    """

    def __init__(self, current: dict, spec: dict[str, dict]):
        super().__init__(current)
        self.spec = spec


def sizes(device: torch.device | str, *, cpu: dict, quick: dict | None = None, gpu: dict | None = None) -> Sizes:
    """Pick a demo's sizes for the device: ``gpu`` on CUDA/MPS (in both modes: on a GPU, QUICK
    shortens the timing, not the sizes), ``quick`` on a CPU in QUICK mode, ``cpu`` otherwise."""
    spec = {"cpu": dict(cpu), "cpu-quick": dict(quick if quick is not None else cpu),
            "gpu": dict(gpu if gpu is not None else cpu)}
    if any(set(entry) != set(cpu) for entry in spec.values()):
        raise ValueError(f"cpu, quick and gpu sizes must name the same keys, got {[sorted(s) for s in spec.values()]}")
    return Sizes(spec[sizes_key(torch.device(device).type, is_quick())], spec)


def sizes_key(device_type: str, quick: bool) -> str:
    """Which entry of a ``Sizes.spec`` a run on this device type and mode uses."""
    if device_type in ("cuda", "mps"):
        return "gpu"
    return "cpu-quick" if quick else "cpu"


@dataclass
class Timing:
    """One measured variant: times are seconds per call."""
    label: str
    median: float
    iqr: float
    runs: int
    peak_bytes: int | None = None
    memory_method: str | None = None
    extra: dict = field(default_factory=dict)
    round_medians: list[float] = field(default_factory=list)
    device_s: float | None = None  # GPU kernel time per call (CUDA only)
    q1: float | None = None        # 25th and 75th percentiles of the timed runs (the IQR's ends)
    q3: float | None = None

    def quartiles(self) -> tuple[float, float]:
        """(25th, 75th) percentile; older records without them get median -/+ IQR/2."""
        if self.q1 is None or self.q3 is None:
            return self.median - self.iqr / 2, self.median + self.iqr / 2
        return self.q1, self.q3

    def __repr__(self) -> str:
        return f"{self.label}: median {format_seconds(self.median)} (IQR {format_seconds(self.iqr)}, {self.runs} runs)"


def format_seconds(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _timer(fn: Callable[[], object], label: str, device: torch.device) -> benchmark.Timer:
    if not callable(fn):
        raise TypeError(f"{label!r}: expected a function that takes no arguments, got {type(fn).__name__}")
    from torch.utils import benchmark

    stmt = "fn(); torch.mps.synchronize()" if device.type == "mps" else "fn()"
    # Timer defaults to ONE thread; measure with the threads the learner's code really gets.
    return benchmark.Timer(stmt=stmt, globals={"fn": fn, "torch": torch}, label=label, description=label,
                           num_threads=torch.get_num_threads())


def _block_size(timer: benchmark.Timer, min_run_time: float) -> int:
    """Calls per block so that a block lasts ~min_run_time / BLOCKS_PER_ROUND."""
    one_call = timer.timeit(1).median
    target = max(min_run_time / BLOCKS_PER_ROUND, MIN_BLOCK_S)
    return max(1, math.ceil(target / max(one_call, 1e-9)))


def _run_round(timer: benchmark.Timer, number: int, min_run_time: float) -> list[benchmark.Measurement]:
    """Timed blocks until min_run_time has passed (at least 3 blocks, for an IQR)."""
    blocks, spent = [], 0.0
    while spent < min_run_time or len(blocks) < 3:
        block = timer.timeit(number)
        blocks.append(block)
        spent += block.median * number
    return blocks


def _on_device(device: torch.device):
    """Make ``device`` current: Timer synchronizes the *current* CUDA device, so timing cuda:1
    while cuda:0 is current would stop the clock before cuda:1's kernels finish."""
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


def gpu_seconds_per_call(fn: Callable[[], object], device: torch.device, calls: int = PROFILED_CALLS) -> float | None:
    """GPU kernel time (kernels, copies, memsets) per call from ``torch.profiler``; None off CUDA
    or when the profiler cannot see the GPU (no CUPTI)."""
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    with _on_device(device), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. CUPTI notices: they cannot change the measurement
        torch.cuda.synchronize(device)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], acc_events=True) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize(device)
        events = list(prof.profiler.kineto_results.events())
    device_ns = [e.end_ns() - e.start_ns() for e in events
                 if e.device_type() == torch.autograd.DeviceType.CUDA and e.name() != "[memory]"]
    return sum(device_ns) / 1e9 / calls if device_ns else None


def measure(fn: Callable[[], object], label: str = "fn", *, device: torch.device | str = "cpu",
            memory: bool = False) -> Timing:
    """Time one zero-argument function; optionally also its peak memory."""
    return _measure_interleaved([(label, fn, {})], torch.device(device), memory)[0]


def _measure_interleaved(variants, device: torch.device, memory: bool) -> list[Timing]:
    from torch.utils import benchmark

    with _on_device(device):
        timers = [_timer(fn, label, device) for label, fn, _ in variants]
        for _, fn, _ in variants:  # warm-up: first calls pay for lazy init, caches, autotuning
            fn()
        budget = _settings["min_run_time"]
        numbers = [_block_size(timer, budget) for timer in timers]
        rounds: list[list[list[benchmark.Measurement]]] = [[] for _ in variants]
        for _ in range(_settings["rounds"]):  # interleaved: baseline, tip, baseline, tip, ...
            for i, timer in enumerate(timers):
                rounds[i].append(_run_round(timer, numbers[i], budget))
        timings = []
        gpu_seconds = [gpu_seconds_per_call(fn, device) for _, fn, _ in variants]
        if any(s is not None for s in gpu_seconds):  # the profiler sees the GPU: no kernel means none ran
            gpu_seconds = [s or 0.0 for s in gpu_seconds]
        for (label, fn, extra), measured, gpu_s in zip(variants, rounds, gpu_seconds):
            m = benchmark.Measurement.merge([block for one_round in measured for block in one_round])[0]
            q1, q3 = torch.tensor(m.times, dtype=torch.float64).quantile(
                torch.tensor([0.25, 0.75], dtype=torch.float64)).tolist()  # as Timer computes its IQR
            per_round = [benchmark.Measurement.merge(one_round)[0].median for one_round in measured]
            peak, method = peak_memory(fn, device) if memory else (None, None)
            timings.append(Timing(label, m.median, m.iqr, len(m.times), peak, method, dict(extra), per_round, gpu_s,
                                  q1, q3))
    return timings


def _normalize(variant) -> tuple[str, Callable[[], object], dict]:
    if not isinstance(variant, tuple) or len(variant) not in (2, 3) or not isinstance(variant[0], str):
        raise TypeError(f"each variant must be (label, fn) or (label, fn, extra_dict), got {variant!r}")
    label, fn, *rest = variant
    extra = rest[0] if rest else {}
    if not isinstance(extra, dict):
        raise TypeError(f"{label!r}: extra must be a dict, got {type(extra).__name__}")
    return label, fn, extra


@dataclass
class Comparison:
    """A baseline and one or more variants, measured side by side on one device."""
    tip: str
    title: str
    device: str          # "cpu", "cuda:0", ...
    device_name: str     # the hardware, in words
    sizes: dict
    rows: list[Timing]
    about_overhead: bool = False   # the tip removes host overhead: a host-bound baseline is the point
    host: bool = False             # a host-side comparison: runs on the CPU on every machine
    sizes_spec: dict | None = None  # every device's sizes (see ``sizes``), for matching references
    quick: bool = False
    notebook: str = ""

    @property
    def baseline(self) -> Timing:
        return self.rows[0]

    def row(self, label: str) -> Timing:
        for row in self.rows:
            if row.label == label:
                return row
        raise KeyError(f"no variant {label!r} in {self.tip}; variants: {[r.label for r in self.rows]}")

    def speedup(self, row: Timing) -> float:
        """How many times faster than the baseline (>1 means the variant is faster)."""
        return self.baseline.median / row.median

    def memory_ratio(self, row: Timing) -> float | None:
        if row.peak_bytes is None or not self.baseline.peak_bytes:
            return None
        return row.peak_bytes / self.baseline.peak_bytes

    def verdict(self, row: Timing | str, against: Timing | str | None = None) -> verdict.Verdict:
        """The speed verdict of a variant (a row or its label) against the baseline, or against
        another variant of the same comparison (``against``), generated from the measurements."""
        return verdict.time_verdict(*self._pair(row, against))

    def memory_verdict(self, row: Timing | str, against: Timing | str | None = None) -> verdict.Verdict | None:
        """The peak-memory verdict of a variant, or None when memory was not measured."""
        return verdict.memory_verdict(*self._pair(row, against))

    def _pair(self, row, against) -> tuple["Comparison", Timing]:
        row = self.row(row) if isinstance(row, str) else row
        if against is None:
            return self, row
        base = self.row(against) if isinstance(against, str) else against
        return dataclasses.replace(self, rows=[base, row]), row

    def launch_bound(self) -> str | None:
        """Why this comparison measures kernel launches rather than the tip (CUDA), or None."""
        return verdict.launch_bound_reason(self)

    def summary(self) -> str:
        """One generated sentence per variant: the text a notebook prints under a comparison."""
        lines = [verdict.sentence(self, row) for row in self.rows[1:]]
        reason = self.launch_bound()
        if reason:
            lines.insert(0, f"Launch-bound on {self.device_name}: {reason}. These times measure Python and "
                            f"kernel launches, not the tip; a larger size would show the tip.")
        return "\n".join(lines)

    def table_rows(self) -> list[dict[str, str]]:
        rows = []
        gpu_time = any(r.device_s is not None for r in self.rows)
        for row in self.rows:
            cells = {"variant": row.label, "median": format_seconds(row.median),
                     "IQR": format_seconds(row.iqr), "runs": str(row.runs),
                     "speedup": f"{self.speedup(row):.2f}x"}
            if gpu_time:
                cells["GPU time"] = "-" if row.device_s is None else format_seconds(row.device_s)
            if row.peak_bytes is not None:
                cells["peak memory"] = format_bytes(row.peak_bytes)
            cells.update({k: str(v) for k, v in row.extra.items()})
            cells["verdict"] = self.verdict(row).text
            rows.append(cells)
        return rows

    def caption(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return f"{self.tip}: {self.title} on {self.device_name}" + (f" ({sizes})" if sizes else "")

    def footnote(self) -> str:
        """How to read the table: rounds, what 'GPU time' and 'peak memory' count."""
        rounds = len(self.baseline.round_medians)
        notes = [f"median and IQR over {rounds} interleaved round{'s' * (rounds != 1)}"]
        if any(r.device_s is not None for r in self.rows):
            notes.append("GPU time: kernel time per call from torch.profiler")
        methods = {r.memory_method for r in self.rows if r.memory_method}
        notes += [memory_note(m) for m in sorted(methods)]
        return "; ".join(notes) + "."

    def references(self) -> list:
        from .references import matching
        return matching(self)

    def __repr__(self) -> str:
        from .claims import lines_for
        from .references import reference_lines
        from .tables import text_table
        parts = [self.caption(), text_table(self.table_rows()), self.footnote(), self.summary(),
                 *lines_for(self), *reference_lines(self)]
        return "\n".join(p for p in parts if p)

    def _repr_html_(self) -> str:
        return self.to_html()

    def to_html(self, with_references: bool = True) -> str:
        """Table, note, generated verdicts, the reference runs beside this one, and the plot."""
        from .claims import lines_for
        from .plots import comparison_figure, figure_html
        from .references import reference_html
        from .tables import html_table, html_text
        return (html_table(self.table_rows(), caption=self.caption()) + html_text(self.footnote(), small=True)
                + html_text(self.summary()) + html_text("\n".join(lines_for(self)), small=True)
                + (reference_html(self) if with_references else "") + figure_html(comparison_figure(self)))

    def to_records(self) -> list[records.Record]:
        comparison_id = uuid.uuid4().hex[:12]
        return [
            records.Record(
                comparison=comparison_id, tip=self.tip, title=self.title, variant=row.label,
                role="baseline" if i == 0 else "variant", device=self.device,
                device_name=self.device_name, sizes=dict(self.sizes),
                median_s=row.median, iqr_s=row.iqr, runs=row.runs, speedup=self.speedup(row),
                peak_bytes=row.peak_bytes, memory_method=row.memory_method,
                extra={k: _jsonable(v) for k, v in row.extra.items()},
                notebook=self.notebook, torch=torch.__version__, quick=self.quick,
                round_medians=list(row.round_medians), device_s=row.device_s, q1_s=row.q1, q3_s=row.q3,
                about_overhead=self.about_overhead, host=self.host, sizes_spec=self.sizes_spec,
                verdict=self.verdict(row).kind,
            )
            for i, row in enumerate(self.rows)
        ]

    @classmethod
    def from_records(cls, group: list[records.Record]) -> "Comparison":
        """Rebuild a comparison from the records one ``compare`` call wrote (baseline first)."""
        group = sorted(group, key=lambda r: r.role != "baseline")
        first = group[0]
        rows = [Timing(r.variant, r.median_s, r.iqr_s, r.runs, r.peak_bytes, r.memory_method, dict(r.extra),
                       list(r.round_medians), r.device_s, r.q1_s, r.q3_s)
                for r in group]
        return cls(first.tip, first.title, first.device, first.device_name, dict(first.sizes), rows,
                   about_overhead=first.about_overhead, host=first.host, sizes_spec=first.sizes_spec,
                   quick=first.quick, notebook=first.notebook)


def _jsonable(value):
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def compare(tip: str, baseline, *variants, title: str = "", sizes: dict | None = None,
            device: torch.device | str = "cpu", memory: bool = True, record: bool = True,
            about_overhead: bool = False, host: bool = False) -> Comparison:
    """Measure a baseline and the tip's variant(s) side by side; record and return the result.

    Each of ``baseline`` and ``variants`` is ``(label, fn)`` or ``(label, fn, extra)`` where
    ``fn`` takes no arguments and ``extra`` holds other figures for the table (e.g. a
    parameter count). ``sizes`` is a dict, or a ``Sizes`` from ``bench.sizes`` (then a
    reference run is shown only if it used the sizes this notebook picks for its device).
    ``about_overhead=True`` marks a tip whose point is host-side overhead (sync points, launches).
    ``host=True`` marks a host-side comparison (it runs on the CPU whatever the notebook's device).
    The returned object renders as a table, generated verdicts and a plot in Jupyter.
    """
    if not isinstance(tip, str) or not tip:
        raise ValueError("tip must be a curriculum ID such as 'T044'")
    if not variants:
        raise ValueError("compare() needs a baseline and at least one variant")
    parsed = [_normalize(v) for v in (baseline, *variants)]
    labels = [label for label, _, _ in parsed]
    if len(set(labels)) != len(labels):
        raise ValueError(f"variant labels must be distinct, got {labels}")
    device = torch.device("cpu") if host else torch.device(device)
    result = Comparison(tip, title or tip, str(device), device_name(device), dict(sizes or {}),
                        _measure_interleaved(parsed, device, memory), about_overhead=about_overhead, host=host,
                        sizes_spec=getattr(sizes, "spec", None), quick=is_quick(),
                        notebook=os.environ.get("COURSE_NOTEBOOK", ""))
    if record:
        records.append(result.to_records())
    return result
