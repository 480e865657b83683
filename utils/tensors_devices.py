"""Setup for notebook 01 (tensors and devices): the CPU work of a step, a model and an epoch of
batches for the metrics demo, and the table of which calls warned in sync debug mode. The lessons
are in the notebook; this is the scaffolding around them.
"""
from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
import torch
from torch.profiler import record_function

from .tables import Table


def cpu_batch_work(shape: tuple[int, ...] = (128, 3, 32, 32), seed: int = 0) -> Callable[[], np.ndarray]:
    """A stand-in for a data pipeline in the main process: a function that normalises a uint8 batch
    with NumPy into a reused float32 buffer, one thread, the same work on every device. It is
    labelled "load next batch" in profiles and timelines."""
    raw = np.random.default_rng(seed).integers(0, 256, size=shape, dtype=np.uint8)
    buffer = np.empty(shape, dtype=np.float32)

    def load_next_batch() -> np.ndarray:
        with record_function("load next batch"):
            np.subtract(raw, np.float32(127.5), out=buffer)
            np.multiply(buffer, np.float32(1 / 63.75), out=buffer)
        return buffer
    return load_next_batch


def classifier(features: int, hidden: int, classes: int, device: torch.device) -> torch.nn.Module:
    """A two-hidden-layer MLP in eval mode on ``device`` (seeded)."""
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(features, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, classes),
    ).to(device).eval()


def labelled_batches(batches: int, batch: int, features: int, classes: int,
                     device: torch.device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``batches`` random (inputs, class labels) pairs, created on ``device``."""
    torch.manual_seed(1)
    return [(torch.randn(batch, features, device=device), torch.randint(0, classes, (batch,), device=device))
            for _ in range(batches)]


def sync_points(ops: dict[str, Callable[[], object]], device: torch.device) -> Table:
    """Which of ``ops`` made the CPU wait: on CUDA, with ``torch.cuda.set_sync_debug_mode("warn")``
    switched on by the caller, the calls that warned of a synchronizing operation. On other devices
    nothing can be checked: a folded table lists the calls."""
    if device.type != "cuda":
        return Table([{"operation": label} for label in ops], caption=f"Sync points: not checked on {device.type}",
                     folded=True)
    rows = []
    for label, op in ops.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            op()
        rows.append({"operation": label,
                     "synchronizes": any("synchronizing CUDA operation" in str(w.message) for w in caught)})
    return Table(rows, caption="torch.cuda.set_sync_debug_mode('warn') on this GPU")
