"""The data model of a measurement: timed variants (``Timing``) compared on one device (``Comparison``).

Plain data, at the bottom of the toolkit: no verdicts, no words, no rendering. ``utils.verdict``
judges a comparison, ``utils.present`` shows it, ``utils.bench`` measures it, and the records
(``utils.records``) carry it between a notebook and the report.
"""
from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Callable

from . import records
from .units import format_number, format_seconds


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
    device_merged: bool = False    # device_s merges overlapping kernels (older records summed them)

    def quartiles(self) -> tuple[float, float]:
        """(25th, 75th) percentile; older records without them get median -/+ IQR/2."""
        if self.q1 is None or self.q3 is None:
            return self.median - self.iqr / 2, self.median + self.iqr / 2
        return self.q1, self.q3

    def __repr__(self) -> str:
        return f"{self.label}: median {format_seconds(self.median)} (IQR {format_seconds(self.iqr)}, {self.runs} runs)"


class Sizes(dict):
    """The sizes a demo uses on this device, plus the sizes it would use on the others.

    Behaves as a plain dict of the current sizes; ``spec`` keeps every device's choice so a
    record can say which sizes a reference GPU run must have used to be comparable.
    """

    def __init__(self, current: dict, spec: dict[str, dict]):
        super().__init__(current)
        self.spec = spec


def sizes_key(device_type: str, quick: bool) -> str:
    """Which entry of a ``Sizes.spec`` a run on this device type and mode uses."""
    if device_type in ("cuda", "mps"):
        return "gpu"
    return "cpu-quick" if quick else "cpu"


@dataclass
class Demo:
    """What makes two measurements the same demo across runs: tip, title, variant labels and the
    sizes (with ``sizes_spec``, every device's sizes, so a run on another device can be matched)."""
    tip: str
    title: str
    labels: list[str]
    sizes: dict
    sizes_spec: dict | None = None


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
    sizes_spec: dict | None = None  # every device's sizes (see ``Sizes``), for matching references
    quick: bool = False
    notebook: str = ""
    why: str = ""                  # the key of its explanations in utils/why/ (default: the tip)
    headline_variant: str = ""     # the variant its headline is about (default: the first after the baseline)
    torch: str = ""                # the torch version that measured it
    facts: dict[str, str] = field(default_factory=dict)  # further figures, as text, its explanations quote
    metric: str = ""               # what the tip is about: "" (time), "memory", or one of the rows' extra columns

    @property
    def baseline(self) -> Timing:
        return self.rows[0]

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]

    @property
    def on_gpu(self) -> bool:
        return self.device_type in ("cuda", "mps")

    @property
    def why_key(self) -> str:
        return self.why or self.tip

    @property
    def demo(self) -> Demo:
        return Demo(self.tip, self.title, [r.label for r in self.rows], self.sizes, self.sizes_spec)

    def row(self, label: str) -> Timing:
        for row in self.rows:
            if row.label == label:
                return row
        raise KeyError(f"no variant {label!r} in {self.tip}; variants: {[r.label for r in self.rows]}")

    def featured(self) -> Timing:
        """The variant the headline is about."""
        return self.row(self.headline_variant) if self.headline_variant else self.rows[1]

    def speedup(self, row: Timing) -> float:
        """How many times faster than the baseline (>1 means the variant is faster)."""
        return self.baseline.median / row.median

    def memory_ratio(self, row: Timing) -> float | None:
        if row.peak_bytes is None or not self.baseline.peak_bytes:
            return None
        return row.peak_bytes / self.baseline.peak_bytes

    def resolve(self, row: Timing | str) -> Timing:
        return self.row(row) if isinstance(row, str) else row

    def pair(self, row: Timing | str, against: Timing | str | None = None) -> tuple["Comparison", Timing]:
        """This comparison narrowed to ``against`` (default: the baseline) and ``row``, and that row."""
        row = self.resolve(row)
        if against is None:
            return self, row
        return dataclasses.replace(self, rows=[self.resolve(against), row], headline_variant=""), row

    def to_records(self, verdicts: dict[str, str] | None = None) -> list[records.Record]:
        """One record per variant; ``verdicts`` maps a label to its verdict kind."""
        comparison_id = uuid.uuid4().hex[:12]
        return [
            records.Record(
                comparison=comparison_id, tip=self.tip, title=self.title, variant=row.label,
                role="baseline" if i == 0 else "variant", device=self.device,
                device_name=self.device_name, sizes=dict(self.sizes),
                median_s=row.median, iqr_s=row.iqr, runs=row.runs, speedup=self.speedup(row),
                peak_bytes=row.peak_bytes, memory_method=row.memory_method,
                extra={k: _jsonable(v) for k, v in row.extra.items()},
                notebook=self.notebook, torch=self.torch, quick=self.quick,
                round_medians=list(row.round_medians), device_s=row.device_s, q1_s=row.q1, q3_s=row.q3,
                device_merged=row.device_merged,
                about_overhead=self.about_overhead, host=self.host, sizes_spec=self.sizes_spec,
                verdict=(verdicts or {}).get(row.label, ""), why=self.why, headline_variant=self.headline_variant,
                facts=dict(self.facts), metric=self.metric,
            )
            for i, row in enumerate(self.rows)
        ]

    @classmethod
    def from_records(cls, group: list[records.Record]):
        """Rebuild a comparison from the records one ``compare`` call wrote (baseline first)."""
        group = sorted(group, key=lambda r: r.role != "baseline")
        first = group[0]
        rows = [Timing(r.variant, r.median_s, r.iqr_s, r.runs, r.peak_bytes, r.memory_method, dict(r.extra),
                       list(r.round_medians), r.device_s, r.q1_s, r.q3_s, r.device_merged)
                for r in group]
        return cls(first.tip, first.title, first.device, first.device_name, dict(first.sizes), rows,
                   about_overhead=first.about_overhead, host=first.host, sizes_spec=first.sizes_spec,
                   quick=first.quick, notebook=first.notebook, why=first.why,
                   headline_variant=first.headline_variant, torch=first.torch, facts=dict(first.facts),
                   metric=first.metric)


@dataclass
class Rate:
    """What a sweep plots instead of time: ``work(value) / seconds`` in ``unit`` (GB/s, samples/s)."""
    unit: str
    work: Callable[[float], float]

    def of(self, value: float, seconds: float) -> float:
        return self.work(value) / seconds


@dataclass
class Sweep:
    """The same comparison at several sizes: ``comparisons[i]`` was measured at ``values[i]`` of ``over``."""
    tip: str
    title: str
    over: str
    values: list
    comparisons: list[Comparison]
    rate: Rate | None = None


@dataclass
class Span:
    """Something that ran, on one lane of a timeline: seconds from the start of the variant's call."""
    variant: str
    lane: str   # "CPU", "GPU", ...
    name: str
    start: float
    end: float


@dataclass
class Timeline:
    """What each lane (CPU, GPU) ran during one call of each variant."""
    tip: str
    title: str
    device_name: str
    spans: list[Span]


def fact_text(value) -> str:
    """A fact in words: a Timing is its median time, a float three significant figures."""
    if isinstance(value, Timing):
        return format_seconds(value.median)
    if isinstance(value, float):
        return format_number(value)
    return str(value)


def group_records(all_records: list[records.Record]) -> list[list[records.Record]]:
    """Records grouped by the comparison that wrote them, in file order."""
    groups: dict[str, list[records.Record]] = {}
    for record in all_records:
        groups.setdefault(record.comparison, []).append(record)
    return list(groups.values())


def _jsonable(value):
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)
