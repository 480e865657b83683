"""The first call of every notebook: ``dev = setup(DEVICE, quick=QUICK)``."""
from __future__ import annotations

import torch

from . import bench
from .device import device_name, pick_device, seed_everything


def setup(device: str = "auto", quick: bool = False, seed: int = 0) -> torch.device:
    """Call once after the parameters cell: picks the device, sets the measuring mode, seeds."""
    if not isinstance(quick, bool):
        raise TypeError(f"QUICK must be True or False, got {quick!r}")
    bench.configure(quick)
    seed_everything(seed)
    dev = pick_device(device)
    print(f"device: {device_name(dev)} | torch {torch.__version__} | {'QUICK' if quick else 'full'} mode")
    return dev
