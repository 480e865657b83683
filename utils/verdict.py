"""The one place where a measurement becomes words: every comparison's verdict comes from here.

A verdict is generated from the numbers, never typed into a notebook. Each variant is judged
against the baseline (or the row given as its ``against``), on its own numbers. On a GPU with a
profile, the rule has three steps (docs/verdicts.md says the same, with the records behind it):

1. **Launch-bound.** Every row of the pair does less than ``LAUNCH_BOUND_S`` of GPU work per call:
   the pair times Python and kernel launches, and gets no speed verdict.
2. **Host-bound rows.** A row is host-bound when its GPU is busy (profiler kernel time) for less
   than ``BUSY_FRACTION`` of its wall time, or when it does less than ``GPU_WORK_S`` of GPU work a
   call: Python and launches, not its GPU work, set its pace. The label is per row and always shown.
3. **Which clock decides.** A pair is judged on **GPU time** when either row is host-bound, or when
   the wall clock and GPU time give different verdicts: the difference is then host time, which is
   not what a GPU-work tip changes. Only when both rows keep the GPU busy and the clocks agree does
   the wall clock decide, with its quartiles and rounds behind it. Comparisons whose tip *is* the
   host time (sync points, batching, pinned copies, decoding off the CPU) pass
   ``about_overhead=True``: the wall clock always decides them, and their host-bound rows say so.

On GPU time, a ratio within ``SAME_GPU`` of 1 is **no clear difference** (one profiled sample per
row, so its tolerance is wider than the wall clock's). On the wall clock:

- **Faster / slower** needs two things: the middle halves of the two sets of runs do not
  overlap (the variant's 75th percentile is below the baseline's 25th, or the other way round),
  and the variant is on the same side of the baseline in every interleaved round. A single
  round never earns a directional verdict.
- Otherwise, or when the medians are under 1% apart: **no clear difference**, never "1.00x".

The claims ledger (``utils.claims``) judges a claim on the same verdict and the same clock.
A row with more GPU time than wall time gets a sentence that says why (``gpu_above_wall``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .comparison import Comparison, Timing
from .units import format_bytes, format_ratio
from .units import format_seconds as _s

# Less GPU work than this per call and a comparison times launches whatever else holds: a tiny
# op costs ~7 µs from Python on an H100.
LAUNCH_BOUND_S = 0.1e-3
# Less GPU work than this per call and a row is host-bound even with a busy GPU: launches and the
# profiler's own resolution weigh on it. The course sizes its GPU demos above it on an H100.
GPU_WORK_S = 1e-3
BUSY_FRACTION = 0.5       # GPU kernel time / wall time below this: the host is the bottleneck
NOISY_IQR = 0.5           # IQR above half the median: the machine was busy
SAME_MEMORY = 0.05        # peak memory within 5%: no memory difference
SAME_TIME = 0.01          # medians within 1%: no difference worth a ratio, however tight the runs
# GPU times within 5%: no clear difference. One profiled sample per row: between the H100's QUICK
# and full runs of one commit (tests/data), the same row's GPU time moved by a median of 0.4%, and
# by 10-25% for a few float32 matmul and pageable-copy rows, measured as summed kernel durations.
SAME_GPU = 0.05


@dataclass(frozen=True)
class Verdict:
    kind: str   # "baseline", "faster", "slower", "no clear difference", "launch-bound", "one round"
    text: str   # a short phrase for the table ("host-bound: 4.36x as fast in GPU time")
    note: str = ""  # caveats (noise, the other clock, which rows are host-bound)
    clock: str = "wall"          # the clock that decided: "wall" or "GPU"
    ratio: float | None = None   # baseline / variant on that clock; None without a verdict

    def __str__(self) -> str:
        return self.text + (f" ({self.note})" if self.note else "")

    @property
    def phrase(self) -> str:
        """The verdict without its host-bound label."""
        return self.text.removeprefix(HOST_BOUND + ": ")


HOST_BOUND = "host-bound"


def ratio_words(ratio: float) -> str:
    """A ratio for a sentence: "no clear difference" when it is under ``SAME_TIME`` from 1."""
    return "no clear difference" if abs(ratio - 1) < SAME_TIME else format_ratio(ratio)


def _gpu_timed(result: Comparison, row: Timing) -> bool:
    return result.device.startswith("cuda") and row.device_s is not None


def host_bound_reason(result: Comparison, row: Timing) -> str | None:
    """Why a row's wall time is set by the host (Python, kernel launches) rather than its GPU
    work, or None: off CUDA, unprofiled, or busy for at least half of it with enough GPU work."""
    if not _gpu_timed(result, row):
        return None
    if row.device_s < BUSY_FRACTION * row.median:
        return f"the GPU is busy for {row.device_s / row.median:.0%} of its {_s(row.median)}"
    if row.device_s < GPU_WORK_S:
        return f"{_s(row.device_s)} of GPU work a call, under {_s(GPU_WORK_S)}"
    return None


def launch_bound_reason(result: Comparison, row: Timing | None = None) -> str | None:
    """Why a CUDA comparison measures launches rather than GPU work, or None. With ``row``: that
    variant against the baseline; without: every row (the comparison as a whole)."""
    rows = result.rows if row is None else [result.baseline, row]
    if not all(_gpu_timed(result, r) for r in rows):
        return None
    most = max(r.device_s for r in rows)
    if most < LAUNCH_BOUND_S:
        return f"every row does under {_s(LAUNCH_BOUND_S)} of GPU work per call ({_s(most)} at most)"
    return None


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


def gpu_verdict(base: Timing, row: Timing) -> Verdict:
    """The verdict of ``row`` against ``base`` on GPU time alone (both profiled)."""
    ratio = _gpu_ratio(base, row)
    if not row.device_s:
        return Verdict("faster" if base.device_s else "no clear difference",
                       "no GPU work at all" if base.device_s else "no GPU work in either", clock="GPU", ratio=ratio)
    if abs(ratio - 1) < SAME_GPU:
        return Verdict("no clear difference", "no clear difference in GPU time",
                       f"under {SAME_GPU:.0%} apart", clock="GPU", ratio=ratio)
    if ratio > 1:
        return Verdict("faster", f"{format_ratio(ratio)} as fast in GPU time", clock="GPU", ratio=ratio)
    return Verdict("slower", f"slower in GPU time: {format_ratio(1 / ratio)} the time", clock="GPU", ratio=ratio)


def time_verdict(result: Comparison, row: Timing) -> Verdict:
    """The speed verdict of one row against the comparison's baseline, by the module's rule: a
    short ``text`` for a table, the other clock and the caveats in ``note``."""
    base = result.baseline
    if row is base:
        return Verdict("baseline", "baseline")
    reason = launch_bound_reason(result, row)
    if reason:
        return Verdict("launch-bound", "launch-bound",
                       _join(f"{reason}: this measures Python and kernel launches", gpu_change(result, row)))
    wall = wall_verdict(base, row)
    if not (_gpu_timed(result, base) and _gpu_timed(result, row)):
        return wall
    hosts = [f"{r.label}: {why}" for r in (base, row) if (why := host_bound_reason(result, r))]
    label = f"{HOST_BOUND}: " if hosts else ""
    gpu = gpu_verdict(base, row)
    if result.about_overhead or (not hosts and gpu.kind == wall.kind):   # the wall clock decides
        return Verdict(wall.kind, label + wall.text,
                       _join(wall.note, *hosts, gpu_change(result, row) if hosts else ""), "wall", wall.ratio)
    other = (f"the wall clock agrees ({wall.text})" if wall.kind == gpu.kind
             else f"the wall clock says {_on_the_wall_clock(wall)}, a difference in host time")
    return Verdict(gpu.kind, label + gpu.text, _join(gpu_change(result, row), other, *hosts), "GPU", gpu.ratio)


def _on_the_wall_clock(wall: Verdict) -> str:
    if wall.kind in ("faster", "slower"):
        return f"{wall.kind} ({wall.text.removeprefix('slower: ')})"
    return wall.text


def wall_verdict(base: Timing, row: Timing) -> Verdict:
    """The wall-clock verdict of ``row`` against ``base``, from their runs alone."""
    ratio = base.median / row.median
    notes = []
    if max(r.iqr / r.median for r in (base, row)) > NOISY_IQR:
        notes.append("noisy: an IQR above half its median, rerun before trusting it")
    if abs(ratio - 1) < SAME_TIME:
        return Verdict("no clear difference", "no clear difference", _join(f"under {SAME_TIME:.0%} apart", *notes),
                       ratio=ratio)
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
                             else "the rounds put them in a different order", *notes), ratio=ratio)
    if ratio > 1:
        return Verdict("faster", f"{format_ratio(ratio)} as fast", _join(*notes), ratio=ratio)
    return Verdict("slower", f"slower: {format_ratio(1 / ratio)} the time", _join(*notes), ratio=ratio)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def gpu_above_wall(*points: Comparison | tuple[str, Comparison]) -> str:
    """Why some rows show more GPU time than wall time ('' if none does), in one sentence for a card
    or a whole sweep. ``points``: comparisons, or (where, comparison) pairs for a sweep's points."""
    over, summed = [], False
    for point in points:
        where, result = point if isinstance(point, tuple) else ("", point)
        for r in result.rows:
            if _gpu_timed(result, r) and r.device_s > (1 + SAME_TIME) * r.median:
                over.append(f"{r.label}{f' {where}' if where else ''}: {_s(r.device_s)} of GPU work in {_s(r.median)}")
                summed = summed or not r.device_merged
    if not over:
        return ""
    why = ("these records add up the durations of kernels and copies that overlapped, each in full"
           if summed else "the profiled calls ran slower than the timed ones (overlapping kernels count once)")
    return f"More GPU time than wall time ({'; '.join(over)}): GPU time is read from separate calls under the profiler, and {why}."


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
