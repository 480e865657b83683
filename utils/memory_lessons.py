"""Setup for notebook 05 (memory): models, a reference cycle, allocator counters (real or simulated),
and the small readers that turn a demo into a table. The lessons are in the notebook; this is the
scaffolding around them.
"""
from __future__ import annotations

import contextlib
import gc
import os
import shutil
import subprocess
import warnings
import weakref
from typing import Callable

import matplotlib.pyplot as plt
import torch
from torch import nn

from .bench import is_quick
from .comparison import Comparison
from .memory import peak_memory
from .simulated_cuda import simulate_cuda
from .tables import Table, attempt
from .units import format_bytes

MiB = 2**20


@contextlib.contextmanager
def automatic_gc_paused():
    """Pause Python's automatic cyclic collector (``gc.collect()`` still works), so that it cannot
    run between two lines of a demo and make the outcome a matter of luck."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Trainer:
    """Owns a model and counts its forward calls with a hook. The hook makes a reference cycle:
    trainer -> model -> model._forward_hooks -> bound method self.count_call -> trainer."""

    def __init__(self, model: nn.Module):
        self.model = model
        self.forward_calls = 0
        model.register_forward_hook(self.count_call)

    def count_call(self, module, inputs, output):
        self.forward_calls += 1


def big_model(width: int, device=None) -> nn.Sequential:
    """Two ``width`` x ``width`` linear layers."""
    return nn.Sequential(nn.Linear(width, width, device=device), nn.ReLU(), nn.Linear(width, width, device=device))


def parameter_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


class Lifetimes:
    """Weak references to named objects (they do not keep them alive), read after each step."""

    def __init__(self, **objects):
        self.refs = {name: weakref.ref(obj) for name, obj in objects.items()}
        self.rows: list[dict] = []

    def step(self, step: str) -> None:
        self.rows.append({"step": step, **{name: "alive" if ref() is not None else "freed"
                                           for name, ref in self.refs.items()}})

    def table(self, caption: str = "") -> Table:
        return Table(self.rows, caption=caption)


# ---------------------------------------------------------------- models and sizes of the measured demos

def cnn_classifier(channels: int, device, classes: int = 10) -> nn.Sequential:
    """A small CNN for 32 x 32 images (three conv + BatchNorm + ReLU blocks), seeded, in eval mode."""
    torch.manual_seed(0)
    c = channels
    return nn.Sequential(
        nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
        nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * c, classes),
    ).to(device).eval()


def mlp_blocks(depth: int, width: int, device) -> nn.Sequential:
    """``depth`` blocks of (Linear, LayerNorm, GELU), seeded."""
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.LayerNorm(width), nn.GELU())
                           for _ in range(depth)]).to(device)


def gradients(loss: torch.Tensor, model: nn.Module) -> tuple[torch.Tensor, ...]:
    """The gradients of ``loss`` for every parameter of ``model`` (the backward pass of a training step)."""
    return torch.autograd.grad(loss, list(model.parameters()))


def elementwise_sizes(elements: int) -> dict:
    """The sizes of a float32 elementwise demo."""
    return {"elements": elements, "MiB per tensor": elements * 4 // MiB}


# ---------------------------------------------------------------- T072: allocator counters

class _Gpu:
    """Where the T072 demo allocates: the CUDA device, or the simulated caching allocator."""

    def __init__(self, device: torch.device, sim=None):
        self.device, self.sim = device, sim

    @property
    def name(self) -> str:
        if self.sim is not None:
            return "a simulated allocator"
        return torch.cuda.get_device_name(self.device)

    def tensor(self, nbytes: int) -> torch.Tensor:
        """``nbytes`` of GPU memory (on the simulated allocator: host memory it counts as GPU memory)."""
        if self.sim is not None:
            return self.sim.tensor(nbytes)
        return torch.empty(nbytes // 4, device=self.device)

    def model(self, nbytes: int) -> nn.Module:
        """A module whose weights take ``nbytes`` of GPU memory."""
        module = nn.Module()
        module.register_buffer("weight", self.tensor(nbytes))
        return module


@contextlib.contextmanager
def cuda_or_simulated(device: torch.device):
    """The CUDA device when ``device`` is one (made the current device, so that
    ``torch.cuda.memory_allocated()`` without an argument reads it); elsewhere a simulated caching
    allocator that serves ``torch.cuda.memory_allocated``, ``memory_reserved`` and ``empty_cache``
    (restored on exit)."""
    device = torch.device(device)
    if device.type == "cuda":
        gc.collect()
        with torch.cuda.device(device):
            torch.cuda.empty_cache()
            yield _Gpu(device)
        return
    with simulate_cuda() as sim:
        yield _Gpu(device, sim)


def counters_table(readings: dict[str, tuple[int, int]], gpu: _Gpu) -> Table:
    """``{step: (memory_allocated, memory_reserved)}`` as a table: each counter after each step and,
    in brackets, how much that step moved it (computed from the readings, not assumed)."""
    rows, last = [], None
    for step, now in readings.items():
        row = {"step": step}
        for i, name in enumerate(("memory_allocated", "memory_reserved")):
            moved = last is not None and now[i] != last[i]
            row[name] = format_bytes(now[i]) + (f" ({_change(now[i], last[i])})" if moved else "")
        rows.append(row)
        last = now
    return Table(rows, caption=f"Counters after each step, on {gpu.name}")


def _change(after: int, before: int) -> str:
    return ("+" if after > before else "-") + format_bytes(abs(after - before))


# ---------------------------------------------------------------- small readers

def warned(fn: Callable[[], object], sentences: int = 2) -> str:
    """The warnings a call gives (category and first ``sentences`` sentences), or the error it
    raises, in one line: caught, so that a warning that is the lesson shows as data rather than on
    stderr."""
    caught: list[warnings.WarningMessage] = []

    def recorded():  # recorded inside attempt(), which silences any warning that reaches it
        with warnings.catch_warnings(record=True) as inside:
            warnings.simplefilter("always")
            out = fn()
        caught.extend(inside)
        return out

    outcome = attempt(recorded)
    if outcome.split(":")[0].endswith(("Error", "Exception")):
        return outcome
    return " | ".join(f"{w.category.__name__}: " + ". ".join(str(w.message).split(". ")[:sentences]).rstrip(".") + "."
                      for w in caught) or "no warning"


def gpu_processes(device: torch.device) -> Table:
    """Who holds GPU memory, looking only: this kernel's pid, nvidia-smi's compute processes when
    the driver is installed, and the device's used memory against this process's reserved memory."""
    rows = [{"check": "this kernel's process id", "result": os.getpid()}]
    if shutil.which("nvidia-smi"):
        query = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory",
                                "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        listed = (query.stdout.strip() or query.stderr.strip() or "(none listed)").replace("\n", " | ")
        rows.append({"check": "nvidia-smi compute processes (pid, name, memory)", "result": listed})
    else:
        rows.append({"check": "nvidia-smi", "result": "not found (no NVIDIA driver)"})
    if torch.cuda.is_available():
        index = device if torch.device(device).type == "cuda" else None
        free, total = torch.cuda.mem_get_info(index)
        mine = torch.cuda.memory_reserved(index)
        rows += [{"check": "device memory in use, all processes (cudaMemGetInfo)", "result": format_bytes(total - free)},
                 {"check": "reserved by this process's caching allocator", "result": format_bytes(mine)},
                 {"check": "the rest: other processes and CUDA contexts", "result": format_bytes(total - free - mine)}]
    else:
        rows.append({"check": "torch.cuda.is_available()", "result": False})
    return Table(rows, caption="Looking only")


# ---------------------------------------------------------------- T074: the trade-off, as a picture

def tradeoff_figure(result: Comparison):
    """Peak memory against median time, one point per variant of a comparison: checkpointing
    moves a step down (less memory) and to the right (more time)."""
    fig, ax = plt.subplots(figsize=(7.5, 3.6), layout="constrained")
    scale, unit = (1e-3, "ms") if max(r.median for r in result.rows) >= 1e-3 else (1e-6, "µs")
    size, size_unit = (MiB, "MiB") if max(r.peak_bytes or 0 for r in result.rows) >= MiB else (1024, "KiB")
    for i, row in enumerate(result.rows):
        color = "#9e9e9e" if i == 0 else ("#ff7f0e" if row.label.startswith("reference") else "#1f77b4")
        ax.scatter(row.median / scale, (row.peak_bytes or 0) / size, s=60, color=color, marker="osD^X"[i % 5],
                   zorder=3, label=row.label)
    ax.set_xlabel(f"median time per call ({unit})")
    ax.set_ylabel(f"peak memory ({size_unit})")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.margins(x=0.15, y=0.15)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    fig.suptitle(f"{result.tip}: peak memory against time per training step on {result.device_name}", fontsize=10)
    return fig


# ---------------------------------------------------------------- after Exercise 2: √n checkpointing

def segment_curves(checkpoint_segments: Callable, depths: tuple[int, ...], batch: int, width: int,
                   device: torch.device, quick: bool | None = None) -> dict[int, dict]:
    """For each depth n: the peak memory of one training step of an n-block MLP, plain and with
    ``checkpoint_segments`` at several segment sizes (QUICK: 1, 2, √n and n only; ``quick=None``
    follows the course's mode, ``bench.is_quick()``), and k, the activations one block keeps,
    measured from the plain step (in units of one batch x width tensor)."""
    if quick is None:
        quick = is_quick()
    activation = batch * width * 4
    curves = {}
    for n in depths:
        stack = mlp_blocks(n, width, device)
        params = list(stack.parameters())
        data = torch.randn(batch, width, device=device)

        def step(size=None):
            out = stack(data) if size is None else checkpoint_segments(stack, data, size)
            return torch.autograd.grad(out.square().mean(), params)

        plain, method = peak_memory(step, device)
        tried = {1, 2, round(n ** 0.5), n} | (set() if quick else {s for s in (3, 4, 6, 8, 12, 18) if s < n})
        peaks = {s: peak_memory(lambda: step(s), device)[0] for s in sorted(tried)}
        k = plain / (n * activation)
        curves[n] = dict(plain=plain, peaks=peaks, k=k, balance=(n / k) ** 0.5, best=min(peaks, key=peaks.get),
                         method=method, activation=activation)
    return curves


def segment_table(curves: dict[int, dict]) -> Table:
    """The curves in units of one activation tensor ("a"): how the peak grows with depth."""
    rows = []
    for n, c in curves.items():
        a = c["activation"]
        rows.append({"blocks": n, "no checkpoint": f"{c['plain'] / a:.1f}a", "k per block": f"{c['k']:.1f}a",
                     "segments of 1": f"{c['peaks'][1] / a:.1f}a", "best segment size": c["best"],
                     "at the best size": f"{c['peaks'][c['best']] / a:.1f}a", "balance point √(n/k)": f"{c['balance']:.1f}"})
    return Table(rows, caption=f"Peak memory of a training step, in activations a (memory: {next(iter(curves.values()))['method']})")


def segment_figure(curves: dict[int, dict], device_name: str):
    """Peak memory against segment size (log2), one curve per depth, with the plain step and the
    balance point √(n/k) marked."""
    fig, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
    for (n, c), color in zip(curves.items(), ("#1f77b4", "#d62728")):
        ax.plot(list(c["peaks"]), [p / MiB for p in c["peaks"].values()], "o-", color=color, label=f"{n} blocks")
        ax.axhline(c["plain"] / MiB, color=color, linestyle="--", linewidth=1, label=f"{n} blocks, no checkpoint")
        ax.axvline(c["balance"], color=color, linestyle=":", linewidth=1, label=f"{n} blocks, balance point √(n/k)")
    sizes = sorted({s for c in curves.values() for s in c["peaks"]})
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("segment size (blocks per checkpoint, log scale)")
    ax.set_ylabel("peak memory (MiB)")
    ax.set_ylim(0, 1.1 * max(max(c["plain"], *c["peaks"].values()) for c in curves.values()) / MiB)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    fig.suptitle(f"Peak memory of a training step against segment size on {device_name}", fontsize=10)
    return fig
