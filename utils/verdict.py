"""The one place where a measurement becomes words: every comparison's verdict comes from here.

A verdict is generated from the numbers, never typed into a notebook. Each variant is judged
against the baseline (or the row given as its ``against``), on its own numbers:

- **Host-bound (CUDA).** A row whose GPU is busy (profiler kernel time) for less than half of
  its wall time is paced by Python and kernel launches, not by its GPU work. When both rows of a
  pair are host-bound, or both do less than ``LAUNCH_BOUND_S`` of GPU work per call, the pair
  measures launches: **launch-bound**, no speed verdict. A host-bound variant beside a busy
  baseline is labelled host-bound, with its wall-clock and its GPU-time change side by side,
  unless it is faster by less than its GPU gain: then it is **at least** that fast. Comparisons
  whose tip *is* the host-side overhead (sync points, batch size, pageable copies) pass
  ``about_overhead=True``: only the floor on GPU work applies to them.
- **Faster / slower** needs two things: the middle halves of the two sets of runs do not
  overlap (the variant's 75th percentile is below the baseline's 25th, or the other way round),
  and the variant is on the same side of the baseline in every interleaved round. A single
  round never earns a directional verdict.
- Otherwise, or when the medians are under 1% apart: **no clear difference**, never "1.00x".
- Where a host-bound row's GPU time differs from the other row's, the verdict says both.
- A row with more GPU time than wall time gets a sentence that says why (``gpu_above_wall``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .comparison import Comparison, Timing
from .units import format_bytes, format_ratio
from .units import format_seconds as _s

# Less GPU work than this per call and a comparison times launches whatever else holds: a tiny
# op costs ~7 µs from Python on an H100. The course sizes its GPU demos for >= 1 ms on an H100,
# so a faster GPU (an H200 moves a 2 GiB copy in under 0.5 ms) still clears this floor.
LAUNCH_BOUND_S = 0.1e-3
BUSY_FRACTION = 0.5       # GPU kernel time / wall time below this: the host is the bottleneck
NOISY_IQR = 0.5           # IQR above half the median: the machine was busy
SAME_MEMORY = 0.05        # peak memory within 5%: no memory difference
SAME_TIME = 0.01          # medians within 1%: no difference worth a ratio, however tight the runs


@dataclass(frozen=True)
class Verdict:
    kind: str   # "baseline", "faster", "slower", "no clear difference", "launch-bound" (or host-bound), "one round"
    text: str   # a short phrase for the table
    note: str = ""  # caveats (noise, launch-bound variant)

    def __str__(self) -> str:
        return self.text + (f" ({self.note})" if self.note else "")


def ratio_words(ratio: float) -> str:
    """A ratio for a sentence: "no clear difference" when it is under ``SAME_TIME`` from 1."""
    return "no clear difference" if abs(ratio - 1) < SAME_TIME else format_ratio(ratio)


def _gpu_timed(result: Comparison, row: Timing) -> bool:
    return result.device.startswith("cuda") and row.device_s is not None


def host_bound_reason(result: Comparison, row: Timing) -> str | None:
    """Why a row's wall time is set by the host (Python, kernel launches) rather than its GPU
    work, or None: off CUDA, unprofiled, or the GPU busy for at least half of it."""
    if not _gpu_timed(result, row) or row.device_s >= BUSY_FRACTION * row.median:
        return None
    return f"the GPU is busy for {row.device_s / row.median:.0%} of its {_s(row.median)}"


def launch_bound_reason(result: Comparison, row: Timing | None = None) -> str | None:
    """Why a CUDA comparison measures launches rather than GPU work, or None. With ``row``: that
    variant against the baseline; without: every row (the comparison as a whole)."""
    rows = result.rows if row is None else [result.baseline, row]
    if not all(_gpu_timed(result, r) for r in rows):
        return None
    most = max(r.device_s for r in rows)
    if most < LAUNCH_BOUND_S:
        return f"every row does under {_s(LAUNCH_BOUND_S)} of GPU work per call ({_s(most)} at most)"
    reasons = [host_bound_reason(result, r) for r in rows]
    if result.about_overhead or not all(reasons):
        return None
    return "; ".join(f"{r.label}: {why}" for r, why in zip(rows, reasons))


def gpu_change(result: Comparison, row: Timing) -> str:
    """How the GPU work changed from the baseline to ``row`` ('GPU work fell 4.36x (5.14 ms → 1.18 ms)'),
    or '' where either was not profiled."""
    base = result.baseline
    if not (_gpu_timed(result, base) and _gpu_timed(result, row)):
        return ""
    before, after = base.device_s, row.device_s
    times = f"({_s(before)} → {_s(after)})"
    if not (before and after):
        return f"GPU work {'fell to none' if before else 'rose from none' if after else 'none'} {times}"
    ratio = _gpu_ratio(base, row)
    if abs(ratio - 1) < SAME_TIME:
        return f"GPU work unchanged {times}"
    return f"GPU work {'fell' if ratio > 1 else 'rose'} {format_ratio(max(ratio, 1 / ratio))} {times}"


def _gpu_ratio(base: Timing, row: Timing) -> float:
    return base.device_s / row.device_s if row.device_s else math.inf


def time_verdict(result: Comparison, row: Timing) -> Verdict:
    """The speed verdict of one row against the comparison's baseline: a short ``text`` for a
    table, and the reason or caveats in ``note``."""
    base = result.baseline
    if row is base:
        return Verdict("baseline", "baseline")
    hosts = [r for r in (base, row) if host_bound_reason(result, r)]
    gpu = gpu_change(result, row) if hosts else ""
    reason = launch_bound_reason(result, row)
    if reason:
        return Verdict("launch-bound", "launch-bound",
                       _join(f"{reason}: this measures Python and kernel launches", gpu))
    wall = wall_verdict(base, row)
    host = None if result.about_overhead or not _gpu_timed(result, base) else host_bound_reason(result, row)
    if host and wall.kind == "faster" and _gpu_ratio(base, row) > base.median / row.median:
        return Verdict("faster", f"at least {wall.text}",
                       _join(wall.note, f"host-bound: {host}, so its GPU gain is larger; {gpu}"))
    if host:  # the baseline keeps the GPU busy, this variant does not: both clocks, no speed verdict
        return Verdict("launch-bound", f"host-bound: {_on_the_wall_clock(wall)}; {gpu}", _join(host, wall.note))
    return Verdict(wall.kind, wall.text, _join(wall.note, gpu and f"{gpu}: {_whose(hosts, base)} host overhead"))


def _whose(hosts: list[Timing], base: Timing) -> str:
    if len(hosts) == 2:
        return "both wall times include"
    return f"the {'baseline' if hosts[0] is base else 'variant'}'s wall time includes"


def _on_the_wall_clock(wall: Verdict) -> str:
    if wall.kind in ("faster", "slower"):
        return f"{wall.kind} on the wall clock ({wall.text.removeprefix('slower: ')})"
    return f"{wall.text} on the wall clock"


def wall_verdict(base: Timing, row: Timing) -> Verdict:
    """The wall-clock verdict of ``row`` against ``base``, from their runs alone."""
    ratio = base.median / row.median
    notes = []
    if max(r.iqr / r.median for r in (base, row)) > NOISY_IQR:
        notes.append("noisy: an IQR above half its median, rerun before trusting it")
    if abs(ratio - 1) < SAME_TIME:
        return Verdict("no clear difference", "no clear difference", _join(f"under {SAME_TIME:.0%} apart", *notes))
    (base_q1, base_q3), (row_q1, row_q3) = base.quartiles(), row.quartiles()
    gap_clear = row_q3 < base_q1 or row_q1 > base_q3  # the IQR boxes do not overlap
    rounds = list(zip(base.round_medians, row.round_medians))
    same_side = bool(rounds) and len({b > r for b, r in rounds}) == 1
    if gap_clear and len(rounds) < 2:
        return Verdict("one round", f"{format_ratio(ratio)} in one round",
                       _join("rerun in full mode for a verdict", *notes))
    if not (gap_clear and same_side):  # the ratio stays in sight: a 1.4x gap without a verdict needs a reason
        why = "runs overlap" if not gap_clear else "rounds disagree"
        shown = f"{format_ratio(ratio)} as fast" if ratio > 1 else f"{format_ratio(1 / ratio)} the time"
        return Verdict("no clear difference", f"no clear difference ({shown}, {why})",
                       _join("the middle halves of the runs overlap" if not gap_clear
                             else "the rounds put them in a different order", *notes))
    if ratio > 1:
        return Verdict("faster", f"{format_ratio(ratio)} as fast", _join(*notes))
    return Verdict("slower", f"slower: {format_ratio(1 / ratio)} the time", _join(*notes))


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def gpu_above_wall(result: Comparison, where: str = "") -> str:
    """Why some rows show more GPU time than wall time ('' if none does): the GPU time comes from
    other calls than the timed ones, run under the profiler, and it sums kernels and copies that may
    have run side by side. ``where``: the sweep point, in words."""
    over = [r for r in result.rows if _gpu_timed(result, r) and r.device_s > (1 + SAME_TIME) * r.median]
    if not over:
        return ""
    rows = "; ".join(f"{r.label}: {_s(r.device_s)} of GPU work in {_s(r.median)}" for r in over)
    return (f"More GPU time than wall time{f' {where}' if where else ''} ({rows}): GPU time comes from separate "
            f"calls run under the profiler, which can run slower than the timed ones, and it counts kernels and "
            f"copies that overlap each in full.")


def memory_verdict(result: Comparison, row: Timing) -> Verdict | None:
    """Peak memory against the baseline's, or None when memory was not measured."""
    base = result.baseline
    if row is base or row.peak_bytes is None or base.peak_bytes is None:
        return None
    if base.peak_bytes == row.peak_bytes or (
            base.peak_bytes and abs(row.peak_bytes - base.peak_bytes) <= SAME_MEMORY * base.peak_bytes):
        return Verdict("same memory", f"same peak memory ({format_bytes(row.peak_bytes)})")
    if not base.peak_bytes:
        return Verdict("more memory", f"peak {format_bytes(row.peak_bytes)} where the baseline allocated nothing")
    share = row.peak_bytes / base.peak_bytes
    kind = "less memory" if share < 1 else "more memory"
    return Verdict(kind, f"{share:.0%} of the baseline's peak memory ({format_bytes(row.peak_bytes)} "
                         f"vs {format_bytes(base.peak_bytes)})")
