"""The one place where a measurement becomes words: every comparison's verdict comes from here.

A verdict is generated from the numbers, never typed into a notebook. Rules:

- **Launch-bound (CUDA).** A GPU comparison whose slowest variant keeps the GPU busy (profiler
  kernel time) for less than half of its wall time, or does less than ``LAUNCH_BOUND_S`` of GPU
  work per call at all, measures Python and kernel launches, not the tip: it gets no speed
  verdict. Comparisons whose tip *is* the host-side overhead (sync points, batch size, pageable
  copies) pass ``about_overhead=True`` and are only held to the absolute minimum.
- **Faster / slower** needs two things: the middle halves of the two sets of runs do not
  overlap (the variant's 75th percentile is below the baseline's 25th, or the other way round),
  and the variant is on the same side of the baseline in every interleaved round. A single
  round never earns a directional verdict.
- Otherwise, or when the medians are under 1% apart: **no clear difference**.
"""
from __future__ import annotations

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
    kind: str   # "baseline", "faster", "slower", "no clear difference", "launch-bound", "one round"
    text: str   # a short phrase for the table
    note: str = ""  # caveats (noise, launch-bound variant)

    def __str__(self) -> str:
        return self.text + (f" ({self.note})" if self.note else "")


def launch_bound_reason(result: Comparison) -> str | None:
    """Why a CUDA comparison measures launches rather than GPU work, or None if it does not."""
    if not result.device.startswith("cuda"):
        return None
    slowest = max(result.rows, key=lambda r: r.median)
    if slowest.device_s is None:
        return None
    if slowest.device_s < LAUNCH_BOUND_S:
        return (f"the slowest variant does {_s(slowest.device_s)} of GPU work per call "
                f"(under {_s(LAUNCH_BOUND_S)})")
    if not result.about_overhead and slowest.device_s < BUSY_FRACTION * slowest.median:
        return (f"the GPU is busy for {slowest.device_s / slowest.median:.0%} of the slowest variant's "
                f"{_s(slowest.median)}")
    return None


def time_verdict(result: Comparison, row: Timing) -> Verdict:
    """The speed verdict of one row against the comparison's baseline: a short ``text`` for a
    table, and the reason or caveats in ``note``."""
    base = result.baseline
    if row is base:
        return Verdict("baseline", "baseline")
    reason = launch_bound_reason(result)
    if reason:
        return Verdict("launch-bound", "launch-bound", f"{reason}: this measures Python and kernel launches")
    ratio = base.median / row.median
    notes = []
    if max(r.iqr / r.median for r in (base, row)) > NOISY_IQR:
        notes.append("noisy: an IQR above half its median, rerun before trusting it")
    (base_q1, base_q3), (row_q1, row_q3) = base.quartiles(), row.quartiles()
    gap_clear = row_q3 < base_q1 or row_q1 > base_q3  # the IQR boxes do not overlap
    rounds = list(zip(base.round_medians, row.round_medians))
    same_side = bool(rounds) and len({b > r for b, r in rounds}) == 1
    if gap_clear and len(rounds) < 2:
        return Verdict("one round", f"{format_ratio(ratio)} in one round",
                       "; ".join(["rerun in full mode for a verdict", *notes]))
    if not (gap_clear and same_side) or abs(ratio - 1) < SAME_TIME:
        why = ("the middle halves of the runs overlap" if not gap_clear else "the rounds disagree" if not same_side
               else f"under {SAME_TIME:.0%} apart")
        return Verdict("no clear difference", "no clear difference",
                       "; ".join([f"{format_ratio(ratio)}, {why}", *notes]))
    at_least = _host_bound_variant(result, row) and ratio > 1
    if ratio > 1:
        if at_least:
            notes.append("this variant's time is mostly launch overhead, so its GPU gain is larger")
        return Verdict("faster", f"{'at least ' if at_least else ''}{format_ratio(ratio)} as fast", "; ".join(notes))
    return Verdict("slower", f"slower: {format_ratio(1 / ratio)} the time", "; ".join(notes))


def _host_bound_variant(result: Comparison, row: Timing) -> bool:
    return (result.device.startswith("cuda") and row.device_s is not None
            and row.device_s < BUSY_FRACTION * row.median)


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

