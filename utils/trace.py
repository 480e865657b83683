"""What ran when during one call, from ``torch.profiler``: the spans a timeline plot draws.

CPU lane: the outermost events of the calling thread, named by their ``record_function`` label
or, for a bare PyTorch op, by the op ("aten::item" is where Python waits for a GPU). GPU lanes,
one per CUDA stream: kernels, copies and memsets. Times are seconds from the call's first event.

The drawn call is a typical one: the profiler runs a warm-up step first (the first kernel of a
profiling session pays for the profiler's own start-up, which would sit inside the picture), then
``CALLS`` calls, and the timeline shows the call whose span is their median.
"""
from __future__ import annotations

import warnings
from typing import Callable

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from .comparison import Span
from .device import synchronize

# Ops that make the CPU wait for the GPU (T014): named as such in the CPU lane.
WAITS = {"aten::item", "aten::_local_scalar_dense", "aten::is_nonzero", "aten::nonzero", "aten::equal",
         "cudaStreamSynchronize", "cudaDeviceSynchronize"}
MAX_NAMES = 6  # distinct CPU span names kept; the rest become "other torch ops"
CALLS = 5      # profiled calls of a variant; its timeline draws the one with the median span
CALL = "course: one call"  # the label around each profiled call (not drawn)
# A drawn call is a profiled one: the profiler records every operator and CUPTI timestamps every
# kernel, so it runs a little longer than the unprofiled calls a card's median comes from (one-sided:
# never shorter). On the H100 (torch 2.11) a loop of four 4096x4096 matmuls drew 11.42 ms against its
# card's 11.19 ms (+2.0%, IQR 51 µs). Allowed on top of the card's own spread; the profiler start-up
# the warm-up step keeps out of the picture added 20% (13.7 ms against 11.4), far beyond it.
PROFILED_SLOWER = 0.03
# Besides kernels, copies and memsets, the profiler's GPU lane carries a copy of every
# record_function label and ProfilerStep#N ("gpu_user_annotation", spanning the kernels launched
# inside them), stream and event syncs ("cuda_sync": waiting) and "[memory]" records: none is work.
NOT_GPU_WORK = {"gpu_user_annotation", "user_annotation", "cuda_sync", "cuda_profiler_range", "overhead",
                "cpu_instant_event"}


def is_gpu_work(name: str, activity: str = "", annotation: bool = False) -> bool:
    """Whether a GPU-side profiler event is work (a kernel, a copy, a memset), from its name, its
    activity type where the profiler gives one, and whether it is a label's annotation."""
    return name != "[memory]" and not annotation and activity not in NOT_GPU_WORK


def kineto_gpu_work(event) -> bool:
    """``is_gpu_work`` for an event of ``prof.profiler.kineto_results.events()``."""
    return (event.device_type() == torch.autograd.DeviceType.CUDA
            and is_gpu_work(event.name(), str(called(event, "activity_type") or ""),
                            bool(called(event, "is_user_annotation"))))


def called(event, method: str):
    """``event.method()`` for a raw kineto event, or None where this torch release lacks the method."""
    found = getattr(event, method, None)
    return found() if callable(found) else None


def busy_shares(spans: list[tuple[int, int]]) -> list[int]:
    """What each of ``spans`` (start, end) adds to the time at least one of them was running, in
    the order given: a span overlapping earlier-starting ones adds only the part past them, so the
    shares sum to ``busy_ns``. Kernels overlap on two streams, and can on one: summed durations
    read up to 146% of the wall time for a single-stream float32 matmul on an H100 (T089's odd size)."""
    shares, end = [0] * len(spans), None
    for i in sorted(range(len(spans)), key=spans.__getitem__):
        start, stop = spans[i]
        shares[i] = max(0, stop - (start if end is None else max(start, end)))
        end = stop if end is None else max(end, stop)
    return shares


def busy_ns(spans: list[tuple[int, int]]) -> int:
    """How long at least one of ``spans`` (start, end) was running: overlapping spans count once."""
    return sum(busy_shares(spans))


def spans(label: str, fn: Callable[[], object], device: torch.device) -> list[Span]:
    """The CPU and GPU spans of a typical call of ``fn``, labelled ``label``: after a warm-up call
    and a profiled warm-up step, the median-length call of ``CALLS`` profiled ones."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    fn()
    synchronize(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. CUPTI notices: they cannot change what ran
        events = []   # kineto's raw events, taken when the active steps end (no acc_events parsing)
        with profile(activities=activities, schedule=schedule(wait=0, warmup=1, active=CALLS),
                     on_trace_ready=lambda done: events.extend(done.profiler.kineto_results.events())) as prof:
            for _ in range(1 + CALLS):
                with record_function(CALL):
                    fn()
                    synchronize(device)
                prof.step()
    calls = [_one_call(label, events, marker) for marker in sorted(
        (e for e in events if e.name() == CALL and e.device_type() == torch.autograd.DeviceType.CPU),
        key=lambda e: e.start_ns())]
    calls = sorted((found for found in calls if found), key=lambda found: max(s.end for s in found))
    return _fewer_names(calls[len(calls) // 2]) if calls else []


def _one_call(label: str, events: list, marker) -> list[Span]:
    """The spans of the call inside ``marker`` (its ``record_function`` range), from its first event."""
    inside = [e for e in events if marker.start_ns() <= e.start_ns() <= marker.end_ns() and e is not marker
              and e.name() != CALL and not e.name().startswith("ProfilerStep#")]
    cpu = _outermost([e for e in inside if e.device_type() == torch.autograd.DeviceType.CPU])
    gpu = [e for e in inside if kineto_gpu_work(e)]
    if not cpu and not gpu:
        return []
    start = min(e.start_ns() for e in cpu + gpu)
    found = [Span(label, "CPU", _cpu_name(e), (e.start_ns() - start) / 1e9, (e.end_ns() - start) / 1e9) for e in cpu]
    found += [Span(label, f"GPU stream {e.device_resource_id()}", _gpu_name(e.name()),
                   (e.start_ns() - start) / 1e9, (e.end_ns() - start) / 1e9) for e in gpu]
    return found


def _outermost(events: list) -> list:
    """Events of the thread that ran most, not nested in another (a record_function range holds its ops)."""
    if not events:
        return []
    threads: dict[int, int] = {}
    for e in events:
        threads[e.start_thread_id()] = threads.get(e.start_thread_id(), 0) + e.end_ns() - e.start_ns()
    main = max(threads, key=threads.get)
    kept, end = [], -1
    for e in sorted((e for e in events if e.start_thread_id() == main), key=lambda e: (e.start_ns(), -e.end_ns())):
        if e.start_ns() >= end:
            kept.append(e)
            end = e.end_ns()
    return kept


def _cpu_name(event) -> str:
    name = event.name()
    if name in WAITS:
        return f"waits: {name}"
    return name


def _gpu_name(name: str) -> str:
    lowered = name.lower()
    if "memcpy" in lowered:
        return "GPU: copy"
    if "memset" in lowered:
        return "GPU: memset"
    return "GPU: kernel"


def _fewer_names(found: list[Span]) -> list[Span]:
    """Keep the CPU names that took the most time; merge the rest into "other torch ops"."""
    busy: dict[str, float] = {}
    for span in found:
        if span.lane == "CPU":
            busy[span.name] = busy.get(span.name, 0.0) + span.end - span.start
    keep = set(sorted(busy, key=busy.get, reverse=True)[:MAX_NAMES])
    for span in found:
        if span.lane == "CPU" and span.name not in keep:
            span.name = "other torch ops"
    return found
