"""The course's toolkit: every notebook starts with ``from utils import ...``.

- ``setup``: pick the device and the measuring mode from the papermill parameters.
- ``bench``: honest timing and side-by-side comparisons (recorded for the report).
- ``memory``: peak memory of a call on CPU or CUDA.
- ``Table``: small tables; ``utils.plots`` (imported on first use): the standard comparison plot.
"""
from __future__ import annotations

import logging
import os

# Quiet two kinds of start-up noise that learners cannot act on (and that plain nbgrader
# would count as a failing cell): kineto's per-profile trace lines (read when torch loads,
# so this must come before ``import torch``) and cpp_extension's "No CUDA runtime" notice.
os.environ.setdefault("KINETO_LOG_LEVEL", "6")
logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)

import torch  # noqa: E402

from . import bench, memory, records  # noqa: E402
from .device import device_name, env_report, pick_device, seed_everything  # noqa: E402
from .tables import Table  # noqa: E402

__all__ = ["Table", "bench", "device_name", "env_report", "memory", "pick_device", "records",
           "seed_everything", "setup"]


def setup(device: str = "auto", quick: bool = False, seed: int = 0) -> torch.device:
    """Call once after the parameters cell: picks the device, sets the measuring mode, seeds."""
    if not isinstance(quick, bool):
        raise TypeError(f"QUICK must be True or False, got {quick!r}")
    bench.configure(quick)
    seed_everything(seed)
    dev = pick_device(device)
    print(f"device: {device_name(dev)} | torch {torch.__version__} | {'QUICK' if quick else 'full'} mode")
    return dev
