"""Honest timing (T005) and side-by-side comparison of a baseline and a tip.

Built on ``torch.utils.benchmark.Timer``: it warms up, synchronizes CUDA around every
block of runs, picks a block size so timer overhead is negligible, and reports the median
and interquartile range (IQR) of many runs. Variants are measured in interleaved rounds
(baseline, tip, baseline, tip, ...) so that a burst of background load hits both sides.
"""
from __future__ import annotations

import math
import os
import uuid
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.utils.benchmark as benchmark

from . import records
from .device import device_name
from .memory import format_bytes, peak_memory

# Each variant is timed for min_run_time per round, in blocks of ~1/BLOCKS_PER_ROUND of it.
# We size blocks ourselves: Timer.blocked_autorange grows the block by 10x steps until timer
# overhead is below 1e-4, which on short runs leaves one or two samples and no usable IQR.
QUICK = {"min_run_time": 0.1, "rounds": 1, "quick": True}
FULL = {"min_run_time": 0.4, "rounds": 3, "quick": False}
BLOCKS_PER_ROUND = 20
MIN_BLOCK_S = 1e-3  # timer and sync overhead is a few µs: well under 1% of a block
_settings = dict(FULL)


def configure(quick: bool) -> None:
    """QUICK mode (CI, first look) measures briefly; full mode measures longer and in more rounds."""
    _settings.update(QUICK if quick else FULL)


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


def measure(fn: Callable[[], object], label: str = "fn", *, device: torch.device | str = "cpu",
            memory: bool = False) -> Timing:
    """Time one zero-argument function; optionally also its peak memory."""
    return _measure_interleaved([(label, fn, {})], torch.device(device), memory)[0]


def _measure_interleaved(variants, device: torch.device, memory: bool) -> list[Timing]:
    timers = [_timer(fn, label, device) for label, fn, _ in variants]
    for _, fn, _ in variants:  # warm-up: first calls pay for lazy init, caches, autotuning
        fn()
    budget = _settings["min_run_time"]
    numbers = [_block_size(timer, budget) for timer in timers]
    rounds: list[list[benchmark.Measurement]] = [[] for _ in variants]
    for _ in range(_settings["rounds"]):  # interleaved: baseline, tip, baseline, tip, ...
        for i, timer in enumerate(timers):
            rounds[i].extend(_run_round(timer, numbers[i], budget))
    timings = []
    for (label, fn, extra), measured in zip(variants, rounds):
        m = benchmark.Measurement.merge(measured)[0]
        peak, method = peak_memory(fn, device) if memory else (None, None)
        timings.append(Timing(label, m.median, m.iqr, len(m.times), peak, method, dict(extra)))
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

    @property
    def baseline(self) -> Timing:
        return self.rows[0]

    def speedup(self, row: Timing) -> float:
        """How many times faster than the baseline (>1 means the variant is faster)."""
        return self.baseline.median / row.median

    def memory_ratio(self, row: Timing) -> float | None:
        if row.peak_bytes is None or not self.baseline.peak_bytes:
            return None
        return row.peak_bytes / self.baseline.peak_bytes

    def table_rows(self) -> list[dict[str, str]]:
        rows = []
        for row in self.rows:
            cells = {"variant": row.label, "median": format_seconds(row.median),
                     "IQR": format_seconds(row.iqr), "runs": str(row.runs),
                     "speedup": f"{self.speedup(row):.2f}x"}
            if row.peak_bytes is not None:
                cells["peak memory"] = format_bytes(row.peak_bytes)
            cells.update({k: str(v) for k, v in row.extra.items()})
            rows.append(cells)
        return rows

    def caption(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return f"{self.tip}: {self.title} on {self.device_name}" + (f" ({sizes})" if sizes else "")

    def __repr__(self) -> str:
        from .tables import text_table
        return self.caption() + "\n" + text_table(self.table_rows())

    def _repr_html_(self) -> str:
        from .plots import comparison_figure, figure_html
        from .tables import html_table
        return html_table(self.table_rows(), caption=self.caption()) + figure_html(comparison_figure(self))

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
                notebook=os.environ.get("COURSE_NOTEBOOK", ""), torch=torch.__version__,
                quick=bool(_settings.get("quick", False)),
            )
            for i, row in enumerate(self.rows)
        ]

    @classmethod
    def from_records(cls, group: list[records.Record]) -> "Comparison":
        """Rebuild a comparison from the records one ``compare`` call wrote (baseline first)."""
        group = sorted(group, key=lambda r: r.role != "baseline")
        first = group[0]
        rows = [Timing(r.variant, r.median_s, r.iqr_s, r.runs, r.peak_bytes, r.memory_method, dict(r.extra))
                for r in group]
        return cls(first.tip, first.title, first.device, first.device_name, dict(first.sizes), rows)


def _jsonable(value):
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def compare(tip: str, baseline, *variants, title: str = "", sizes: dict | None = None,
            device: torch.device | str = "cpu", memory: bool = True, record: bool = True) -> Comparison:
    """Measure a baseline and the tip's variant(s) side by side; record and return the result.

    Each of ``baseline`` and ``variants`` is ``(label, fn)`` or ``(label, fn, extra)`` where
    ``fn`` takes no arguments and ``extra`` holds other figures for the table (e.g. a
    parameter count). The returned object renders as a table and a plot in Jupyter.
    """
    if not isinstance(tip, str) or not tip:
        raise ValueError("tip must be a curriculum ID such as 'T044'")
    if not variants:
        raise ValueError("compare() needs a baseline and at least one variant")
    parsed = [_normalize(v) for v in (baseline, *variants)]
    labels = [label for label, _, _ in parsed]
    if len(set(labels)) != len(labels):
        raise ValueError(f"variant labels must be distinct, got {labels}")
    device = torch.device(device)
    result = Comparison(tip, title or tip, str(device), device_name(device), dict(sizes or {}),
                        _measure_interleaved(parsed, device, memory))
    if record:
        records.append(result.to_records())
    return result
