"""Peak memory of one call, on any device.

CUDA: the caching allocator's own counters (``torch.cuda.max_memory_allocated``), relative
to what was allocated before the call.

CPU: PyTorch keeps no allocator statistics on the CPU, and the process RSS is too coarse
(glibc caches freed pages, other threads allocate). Instead we run the call under
``torch.profiler`` with ``profile_memory=True``. Every tensor allocation and free made by
PyTorch's CPU allocator is then reported as a memory event with its size; replaying them
in time order gives the exact peak of live tensor bytes allocated during the call. Frees of
tensors that existed before the call are not credited (their allocation is not among this
call's events), so the figure is "new tensor memory at its highest". Memory that is not tensor
storage (Python objects, NumPy arrays) is not counted.

MPS (Apple GPUs): torch keeps no peak counter there, so the same profiler events are read,
those of MPS tensors. (This course's CI has no Mac: that path is untested.)

The CPU and CUDA figures are close but not identical: the CUDA allocator rounds every block up (to
512 bytes) and also counts workspaces that cuBLAS and cuDNN take from it. ``memory_note``
says so under every table.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Callable

import torch
from torch._C._profiler import _EventType
from torch.profiler import ProfilerActivity, profile

from .units import format_bytes  # noqa: F401  (notebooks call memory.format_bytes)

CUDA_METHOD = "torch.cuda.max_memory_allocated"
CPU_METHOD = "torch.profiler memory events (tensor bytes)"
MPS_METHOD = "torch.profiler memory events (MPS tensor bytes)"


_NOTES = {
    CPU_METHOD: "peak memory (CPU): tensor bytes allocated during one call, from torch.profiler's memory "
                "events; Python objects and NumPy arrays are not counted",
    MPS_METHOD: "peak memory (MPS): bytes of Apple-GPU tensors allocated during one call, from torch.profiler's "
                "memory events (MPS has no peak-memory counter)",
    CUDA_METHOD: "peak memory (CUDA): the caching allocator's peak above its starting point "
                 "(torch.cuda.max_memory_allocated), in blocks rounded up to 512 B and including cuBLAS/cuDNN "
                 "workspaces, so it can exceed the CPU figure for the same code",
}


def memory_note(method: str) -> str:
    """What a peak-memory figure counts, for the note under a table."""
    return _NOTES.get(method, f"peak memory: {method}")


def peak_memory(fn: Callable[[], object], device: torch.device | str) -> tuple[int, str]:
    """Run ``fn`` once and return (peak bytes allocated above the starting point, method)."""
    device = torch.device(device)
    if device.type == "cuda":
        return _cuda_peak(fn, device), CUDA_METHOD
    if device.type == "mps":
        return _profiled_peak(fn, "mps"), MPS_METHOD
    return _profiled_peak(fn, "cpu"), CPU_METHOD


def held_memory(fn: Callable[[], object], device: torch.device | str) -> tuple[int, str]:
    """Bytes of new tensor memory still allocated when ``fn`` returns, its result kept alive
    (what a returned list of losses holds, say), and the method used."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        start = torch.cuda.memory_allocated(device)
        return (_read_after(fn, lambda: torch.cuda.synchronize(device),
                            lambda: torch.cuda.memory_allocated(device) - start),
                "torch.cuda.memory_allocated after minus before")
    if device.type == "mps":
        start = torch.mps.current_allocated_memory()
        return (_read_after(fn, torch.mps.synchronize, lambda: torch.mps.current_allocated_memory() - start),
                "torch.mps.current_allocated_memory after minus before")
    changes, result = _memory_events(fn, "cpu")
    del result
    return int(sum(changes)), CPU_METHOD  # never negative: only blocks allocated during fn are freed


def _cuda_peak(fn: Callable[[], object], device: torch.device) -> int:
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    start = torch.cuda.memory_allocated(device)
    return _read_after(fn, lambda: torch.cuda.synchronize(device),
                       lambda: torch.cuda.max_memory_allocated(device) - start)


def _read_after(fn: Callable[[], object], sync: Callable[[], None], read: Callable[[], int]) -> int:
    """Run ``fn``, wait for the device, read a counter while the result is still alive."""
    result = fn()
    sync()
    value = read()
    del result
    return max(int(value), 0)


def _memory_events(fn: Callable[[], object], device_type: str) -> tuple[list[int], object]:
    """The +/- bytes of every allocation and free of ``device_type`` tensors during ``fn``, in time
    order; and its result. A free counts only if its block was allocated during ``fn``: the allocator
    also reports the size of blocks allocated under an earlier profiling session, and those would pull
    the figure down."""
    # Only kineto's raw events are read. acc_events=True would also silence torch's "Profiler clears
    # events" notice, but it turns every event into a Python object at exit: 0.47 s instead of 0.035 s
    # for a call of 1,800 operators on the 2-core VM. The notice is filtered instead (one cycle here).
    with _quiet_native_stderr(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events", category=UserWarning)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            result = fn()
    allocations = sorted((e for e in _walk(prof.profiler.kineto_results.experimental_event_tree())
                          if e.tag == _EventType.Allocation and e.extra_fields.device.type == device_type),
                         key=lambda e: e.start_time_ns)
    seen, changes = set(), []
    for e in allocations:
        ptr, nbytes = e.extra_fields.ptr, e.extra_fields.alloc_size
        if nbytes > 0:
            seen.add(ptr)
        elif ptr in seen:
            seen.discard(ptr)
        else:
            continue
        changes.append(nbytes)
    return changes, result


def _walk(events):
    """Every event of the profiler's event tree, parents before their children."""
    for event in events:
        yield event
        yield from _walk(event.children)


def _profiled_peak(fn: Callable[[], object], device_type: str) -> int:
    changes, result = _memory_events(fn, device_type)
    del result
    live = peak = 0
    for nbytes in changes:
        live += nbytes
        peak = max(peak, live)
    return int(peak)


@contextlib.contextmanager
def _quiet_native_stderr():
    """Silence the C++ allocator's notice ("Memory block of unknown size was allocated before the
    profiling started") that every free of a pre-existing tensor prints straight to fd 2."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "wb") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
