"""Notebook 09 (profiling): the input pipeline of its training step, and where traces go.

The augmentation code lives here, not in the notebook, because DataLoader worker processes must
import it: on macOS and Windows (and on Linux from Python 3.14) workers do not fork the notebook's
process, so they cannot see functions defined in a notebook cell. The notebook shows its source.

Two versions of one augmentation (random brightness and contrast, pad with zeros, random 32x32
crop, random horizontal flip, normalize: a common CIFAR recipe); given the same random parameters
they return the same tensor:

- ``augment_one``: one image at a time, as a per-sample ``Dataset.__getitem__`` does it;
- ``augment_batch``: the whole batch in a few tensor operations, on whatever device it is on.

Below them, the rest of the notebook's setup (the images, the model) and the small readers that
turn a finished profile into tables: the time of each labelled phase per step, the operators called
inside a label, the Python line behind an operator, cProfile's top functions; and ``Folded``, which
shows a long text (a full profiler table, a function's source) only on a click.
"""
from __future__ import annotations

import bisect
import pstats
import re
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import record_function
from torch.utils.data import Dataset

from .trace import busy_ns, busy_shares, called, kineto_gpu_work
from .units import format_seconds

SIZE = 32            # output images are SIZE x SIZE
PAD = 4              # zero padding before the random crop
JITTER = 0.4        # brightness and contrast factors are drawn from [1 - JITTER, 1 + JITTER]
GRAY = (0.299, 0.587, 0.114)   # RGB weights of the grayscale mean that contrast blends towards
MEAN = (0.49, 0.48, 0.45)
STD = (0.25, 0.24, 0.26)
SAMPLE_LABEL = "data: augment one sample"


def trace_dir() -> Path:
    """The repo's ignored ``build/traces`` folder (created if missing): where the notebook writes traces."""
    path = Path(__file__).resolve().parents[1] / "build" / "traces"
    path.mkdir(parents=True, exist_ok=True)
    return path


def random_params(batch: int, device: torch.device | str = "cpu",
                  generator: torch.Generator | None = None) -> tuple[torch.Tensor, ...]:
    """Per image: crop offsets (top, left) in [0, 2*PAD], a flip flag, brightness and contrast factors.

    Drawn directly on ``device`` (no copies), or on the CPU from ``generator`` when one is given."""
    where = {"generator": generator} if generator is not None else {"device": device}
    tops = torch.randint(0, 2 * PAD + 1, (batch,), **where)
    lefts = torch.randint(0, 2 * PAD + 1, (batch,), **where)
    flips = torch.rand(batch, **where) < 0.5
    brightness = 1 - JITTER + 2 * JITTER * torch.rand(batch, **where)
    contrast = 1 - JITTER + 2 * JITTER * torch.rand(batch, **where)
    return tuple(t.to(device) for t in (tops, lefts, flips, brightness, contrast))


def augment_one(image: torch.Tensor, top: int, left: int, flip: bool, brightness: float,
                contrast: float) -> torch.Tensor:
    """One uint8 HxWx3 image -> a normalized 3xSIZExSIZE float tensor (jittered, cropped at top/left, maybe flipped)."""
    x = image.permute(2, 0, 1).float().div(255)                          # HWC uint8 -> CHW float in [0, 1]
    x = (x * brightness).clamp(0, 1)                                    # brightness
    gray = (x * torch.tensor(GRAY).view(3, 1, 1)).sum(0).mean()
    x = (contrast * x + (1 - contrast) * gray).clamp(0, 1)             # contrast: blend with the gray mean
    x = F.pad(x, (PAD, PAD, PAD, PAD))                                  # zeros around the image
    x = x[:, top:top + SIZE, left:left + SIZE]                          # random crop
    if flip:
        x = x.flip(2)                                                   # horizontal flip
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    return (x - mean) / std


def augment_batch(images: torch.Tensor, tops: torch.Tensor, lefts: torch.Tensor, flips: torch.Tensor,
                  brightness: torch.Tensor, contrast: torch.Tensor) -> torch.Tensor:
    """A uint8 Bx HxWx3 batch -> normalized Bx3xSIZExSIZE floats, with a few whole-batch operations.

    Per-image factors broadcast over B x 1 x 1 x 1; each image gets its own crop and flip through
    one gather: output pixel (b, c, i, j) reads padded pixel (b, c, tops[b] + i, lefts[b] + j),
    with j reversed for flipped images.
    """
    device = images.device
    x = images.permute(0, 3, 1, 2).float().div_(255)
    brightness = brightness.to(device).view(-1, 1, 1, 1)
    contrast = contrast.to(device).view(-1, 1, 1, 1)
    x = (x * brightness).clamp_(0, 1)
    gray = (x * torch.tensor(GRAY, device=device).view(1, 3, 1, 1)).sum(1).mean((1, 2)).view(-1, 1, 1, 1)
    x = (contrast * x + (1 - contrast) * gray).clamp_(0, 1)
    x = F.pad(x, (PAD, PAD, PAD, PAD))
    steps = torch.arange(SIZE, device=device)
    rows = tops.to(device)[:, None] + steps                             # B x SIZE
    cols = lefts.to(device)[:, None] + steps
    cols = torch.where(flips.to(device)[:, None], cols.flip(1), cols)   # a flipped crop reads its columns backwards
    batch = torch.arange(x.shape[0], device=device)
    channels = torch.arange(x.shape[1], device=device)
    x = x[batch[:, None, None, None], channels[None, :, None, None], rows[:, None, :, None], cols[:, None, None, :]]
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    return (x - mean) / std


class PerSampleImages(Dataset):
    """uint8 images (N x H x W x 3) and labels; ``__getitem__`` augments ONE image, as many
    real pipelines do (color jitter, crop, flip, normalize per sample), then DataLoader's default
    collate stacks the samples into a batch."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor):
        if images.dtype != torch.uint8 or images.dim() != 4 or images.shape[-1] != 3:
            raise ValueError(f"expected uint8 images of shape N x H x W x 3, got {images.dtype} {tuple(images.shape)}")
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        with record_function(SAMPLE_LABEL):                             # visible in a profile of the main process
            top, left = torch.randint(0, 2 * PAD + 1, (2,)).tolist()
            flip = bool(torch.rand(()) < 0.5)
            brightness, contrast = (1 - JITTER + 2 * JITTER * torch.rand(2)).tolist()
            return augment_one(self.images[index], top, left, flip, brightness, contrast), self.labels[index]


# ---------------------------------------------------------------- the notebook's training step

PHASES = ("data: next(loader)", "data: copy to device", "model: forward + loss", "model: backward",
          "model: optimizer step")
BATCHED_PHASES = ("data: pick indices", "data: copy uint8 batch to device", "data: augment, batched", *PHASES[2:])
STEP = "whole step"             # phase_times' entry for a whole recorded step ...
PROFILER_STEP = "ProfilerStep*"  # ... which key_averages calls this (ProfilerStep#N for each event)
INPUT = "input pipeline (all 'data:' labels)"
CPU = torch.autograd.DeviceType.CPU


def random_images(n: int = 2048, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` decoded uint8 images (N x 32 x 32 x RGB, random pixels: only the time matters) and labels."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 256, (n, SIZE, SIZE, 3), dtype=torch.uint8, generator=g),
            torch.randint(0, 10, (n,), generator=g))


def small_cnn(channels: int, device: torch.device | str) -> nn.Module:
    """Two 3x3 convolutions with ReLU and max-pooling, then a linear classifier (seeded)."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(2 * channels * (SIZE // 4) ** 2, 10),
    ).to(device)


# ---------------------------------------------------------------- reading a finished profile

def label_events(prof, name: str) -> list:
    """The CPU-side events of a ``record_function`` label (or operator), in the order they started."""
    return sorted((e for e in prof.events() if e.name == name and e.device_type == CPU),
                  key=lambda e: e.time_range.start)


def occurrences_ms(prof, name: str) -> list[float]:
    """The duration (ms) of each occurrence of a label on the CPU, in the order they started. Read
    from kineto's raw events: ``prof.events()`` would first turn every event into a Python object,
    seconds for a few GPU steps of thousands of operator calls each."""
    ranges = sorted((e.start_ns(), e.end_ns()) for e in prof.profiler.kineto_results.events()
                    if e.name() == name and e.device_type() == torch.autograd.DeviceType.CPU)
    return [(end - start) / 1e6 for start, end in ranges]


def _launched_gpu_work(events: list) -> list[tuple[int | None, tuple[int, int]]]:
    """(launch time, (start, end)), in ns, of every kernel, copy and memset among a profile's raw
    kineto ``events``. Launched when the CUDA runtime call that queued it (``cudaLaunchKernel``,
    ``cudaMemcpyAsync``...: a CPU event with the same correlation id, linked to an operator)
    started; failing that, when the operator it is linked to started; None where neither was
    recorded (then it counts for the step only)."""
    calls, ops = {}, {}
    for e in events:
        if e.device_type() != CPU:
            continue
        if e.linked_correlation_id() > 0:       # a runtime call: its id is the GPU event's
            calls.setdefault(e.correlation_id(), e.start_ns())
        elif str(called(e, "activity_type") or "cpu_op") in ("cpu_op", "user_annotation"):
            ops.setdefault(e.correlation_id(), e.start_ns())   # an operator (not the profiler's overhead)
    return [(calls.get(e.correlation_id(), ops.get(e.linked_correlation_id())), (e.start_ns(), e.end_ns()))
            for e in events if kineto_gpu_work(e)]


def _gpu_ms_by_phase(events: list, work: list, names, steps: int) -> dict[str, float]:
    """GPU time per step (ms) of the kernels, copies and memsets (``work``) launched inside each
    label's ranges, from any thread (the backward pass's kernels come from autograd's own thread,
    outside the label's event tree but inside its time range). Each GPU event counts once, for the
    innermost range holding its launch, and only for its share of the step's busy time (what it
    adds beyond the events it overlaps), so the phases never add up to more than the step.

    Not ``FunctionEvent.kernels`` summed over the operators inside a range: those lists also hold
    the GPU lane's waits ("cuda_sync"), which are not work, and (torch 2.11) a kernel appears in the
    list of every CPU event that shares its operator's id, where the profiler's own overhead events
    can share one. Summing those lists, the H100 (torch 2.11) read 0.167 + 0.273 ms of phases
    against a 0.421 ms step."""
    windows = sorted((e.start_ns(), e.end_ns(), e.name()) for e in events
                     if e.device_type() == CPU and e.name() in names)
    totals = dict.fromkeys(names, 0)
    for (launch, _), share in zip(work, busy_shares([span for _, span in work])):
        holding = [w for w in windows if launch is not None and w[0] <= launch <= w[1]]
        if holding:
            totals[max(holding)[2]] += share   # the range that started last: the innermost
    return {n: ns / 1e6 / steps for n, ns in totals.items()}


def _step_gpu_ms(work: list, steps: int) -> float:
    """GPU busy time per step (ms) of ``work``: overlapping events count once, as ``bench`` counts them."""
    return busy_ns([span for _, span in work]) / 1e6 / steps


def gpu_ms_per_step(prof, steps: int) -> float:
    """GPU time per step (ms) of a finished profile: the time some kernel, copy or memset it recorded
    was running, whichever thread launched it (the backward pass's come from autograd's own), divided
    by ``steps``. Not the GPU lane's copies of the labels and of ``ProfilerStep#N``, which span the
    kernels launched inside them: adding those up would count the kernels again. Read from
    kineto's raw events, as ``phase_times``' phases are."""
    return _step_gpu_ms(_launched_gpu_work(_raw_events(prof)), steps)


def _raw_events(prof) -> list:
    return list(prof.profiler.kineto_results.events())


def phase_times(prof, names, steps: int, device: torch.device | str = "cpu",
                averages=None) -> dict[str, dict[str, float]]:
    """Per step, in ms: each label's CPU time ("CPU time") and, on CUDA, the GPU time of the
    kernels, copies and memsets launched inside it ("GPU kernel time"), plus the whole step
    (``STEP``) as the last entry: its CPU time is the ``ProfilerStep*`` row's, its GPU time
    ``gpu_ms_per_step``'s. A GPU event counts for one label at most (the innermost range holding
    its launch), so the labels never add up to more than the step.
    ``averages``: the profile's ``key_averages()`` if you have it (each call walks every event again).
    Give it a profile made without ``with_stack``: stacks make every operator slower to record."""
    keys = {**{n: n for n in names}, STEP: PROFILER_STEP}
    averages = prof.key_averages() if averages is None else averages
    totals = {e.key: e.cpu_time_total for e in averages if e.device_type == CPU}
    columns = {"CPU time": {n: totals.get(key, 0.0) / 1e3 / steps for n, key in keys.items()}}
    if torch.device(device).type == "cuda":
        events = _raw_events(prof)
        work = _launched_gpu_work(events)
        columns["GPU kernel time"] = {**_gpu_ms_by_phase(events, work, list(names), steps),
                                      STEP: _step_gpu_ms(work, steps)}
    return columns


def ops_inside(prof, label: str) -> list:
    """Every operator call (``aten::``) made inside a label, nested calls included, from the event tree."""
    todo, found = label_events(prof, label), []
    while todo:
        event = todo.pop()
        for child in event.cpu_children:
            if child.name.startswith("aten::"):
                found.append(child)
            todo.append(child)
    return found


def top_self_operator(averages):
    """The ``aten::`` operator with the largest self CPU time in a profile's ``key_averages()``."""
    ops = [e for e in averages if e.device_type == CPU and e.key.startswith("aten::")]
    return max(ops, key=lambda e: e.self_cpu_time_total)


FRAME = re.compile(r"^(?P<file>.+\.py)\((?P<line>\d+)\): (?P<function>.+)$")


def _own_frame(text: str) -> str | None:
    frame = FRAME.match(text)
    if frame and "torch/" not in frame["file"].replace("\\", "/"):
        return f"{Path(frame['file']).name}:{frame['line']} {frame['function']}"
    return None


NO_FRAME = "(no Python frame recorded)"
NO_FRAMES_WHY = ("torch {version} recorded no Python frame in this profile (no frame event, and no operator's "
                 "stack list): frames need with_stack=True, and torch 2.11 records none even then (CPU and CUDA "
                 "profiles alike, on the H100 and H200 hosts) unless the profile is also given "
                 "experimental_config=torch.profiler._ExperimentalConfig(verbose=True), which fills the stack "
                 "lists; torch 2.14.1 records frame events")


def _tiny_step() -> torch.Tensor:
    return torch.ones(4).add(1)


_FRAMES_RECORDED: dict[bool, bool] = {}


def records_python_frames(verbose: bool = False) -> bool:
    """Whether this torch records any Python frame in a ``with_stack=True`` CPU profile (with the
    verbose experimental config if ``verbose``): as frame events or in operators' ``stack`` lists.
    Found from a tiny profile, once per process, not from the version (torch 2.11 records none
    without ``verbose``; 2.14.1 records frame events). Call it outside any running profiler."""
    if verbose not in _FRAMES_RECORDED:
        from torch.profiler import ProfilerActivity, profile

        extra = {"experimental_config": torch.profiler._ExperimentalConfig(verbose=True)} if verbose else {}
        with profile(activities=[ProfilerActivity.CPU], with_stack=True, **extra) as tiny:
            _tiny_step()
        _FRAMES_RECORDED[verbose] = PythonFrames(tiny).recorded
    return _FRAMES_RECORDED[verbose]


class PythonFrames:
    """The Python frames of a profile made with ``with_stack=True`` (events named
    ``file.py(line): function``), indexed by start time: ``python_caller``'s last resort.

    ``recorded``: whether the profile holds any frame at all, as an event or in an operator's
    ``stack`` list; where it holds none, ``note`` says so and why (else None), and every
    ``python_caller`` reads ``NO_FRAME``."""

    def __init__(self, prof):
        events = [e for e in prof.events() if e.device_type == CPU]
        self.frames = sorted((e for e in events if FRAME.match(e.name)), key=lambda e: e.time_range.start)
        self.starts = [f.time_range.start for f in self.frames]
        self.stacks = sum(1 for e in events if e.stack)
        self.recorded = bool(self.frames) or self.stacks > 0
        self.note = None if self.recorded else NO_FRAMES_WHY.format(version=torch.__version__.split("+")[0])

    def around(self, event) -> str | None:
        """The innermost frame outside torch, on the operator's thread, whose time range holds the
        operator's (one thread's events nest in time); None where that thread recorded none. Never
        a frame of another thread: a helper thread that waits or polls all along (a progress bar's,
        a loader's) has frames holding every operator too."""
        start, end = event.time_range.start, event.time_range.end
        for index in range(bisect.bisect_right(self.starts, start) - 1, -1, -1):
            frame = self.frames[index]
            if frame.thread == event.thread and frame.time_range.end >= end:
                found = _own_frame(frame.name)
                if found:
                    return found
        return None


def python_caller(event, frames: PythonFrames | None = None) -> str:
    """The nearest Python frame above an operator that is not inside torch (``with_stack=True``):
    from the frames the profiler records as parent events, else from the event's ``stack`` list,
    else (given ``PythonFrames(prof)``) from the frames that were running while the operator ran;
    ``NO_FRAME`` where none names it (``PythonFrames(prof).note`` says why, when the whole profile
    holds no frame).

    The last way reads time, not the event tree. On the H100 and H200 hosts (torch 2.11, Python
    3.12) no frame was recorded as an event at all, with or without CUDA activity: there only the
    ``stack`` lists, filled when the profile is given the private
    ``experimental_config=torch.profiler._ExperimentalConfig(verbose=True)``, name the lines;
    without it, nothing does (``records_python_frames()`` tells from a tiny profile)."""
    parent = event.cpu_parent
    while parent is not None:
        found = _own_frame(parent.name)
        if found:
            return found
        parent = parent.cpu_parent
    found = next((found for found in map(_own_frame, event.stack or []) if found), None)
    return found or (frames.around(event) if frames is not None else None) or NO_FRAME


def grouped(times: dict[str, float]) -> dict[str, float]:
    """Phase times with every ``data:`` label added up into one input-pipeline entry, so that the
    per-sample and the batched step line up; the model's labels (and the whole step) as they are."""
    out = {INPUT: sum(v for name, v in times.items() if name.startswith("data:"))}
    out.update({name: v for name, v in times.items() if not name.startswith("data:")})
    return out


def cprofile_top(profile, n: int = 10) -> list[dict[str, object]]:
    """cProfile's ``n`` functions with the most own time, as table rows."""
    stats = pstats.Stats(profile).stats       # (file, line, function) -> (calls, ..., own, cumulative, ...)
    rows = []
    for (file, line, name), (_, calls, own, cumulative, _) in sorted(stats.items(), key=lambda kv: -kv[1][2])[:n]:
        rows.append({"function": name if file == "~" else f"{Path(file).name}:{line} {name}", "calls": calls,
                     "own time (tottime)": format_seconds(own), "with what it calls (cumtime)": format_seconds(cumulative)})
    return rows


def cprofile_function(profile, function: str) -> tuple[int, float, float]:
    """(calls, cumulative seconds, share of all own time) of one function in a cProfile run."""
    stats = pstats.Stats(profile).stats
    total = sum(entry[2] for entry in stats.values())
    found = [(calls, cumulative) for (_, _, name), (_, calls, _, cumulative, _) in stats.items() if name == function]
    calls, cumulative = (sum(c for c, _ in found), sum(t for _, t in found))
    return calls, cumulative, cumulative / total if total else 0.0
