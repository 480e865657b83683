"""The first call of every notebook: ``dev = setup(DEVICE, quick=QUICK)``."""
from __future__ import annotations

import warnings

import torch

from . import bench
from .device import device_name, pick_device, seed_everything


# Library notices that are not a lesson, kept off the learner's stderr (seen on an H100, torch 2.11):
QUIET = (
    # Inductor's hint on every float32 compile on an Ampere+ GPU. Notebooks 08 and 11 compare compiled
    # and eager code at the same float32 precision on purpose; TF32 is notebook 07's own tip (T091).
    "TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled",
    # The profiler's notice that a schedule with several cycles keeps only the last; 09 uses one cycle.
    "Warning: Profiler clears events at the end of each cycle",
    # torch.export.load reading its own archive into read-only buffers: torch's internals, not the learner's.
    "The given buffer is not writable",
)


def quiet_library_notices() -> None:
    for message in QUIET:
        warnings.filterwarnings("ignore", message=message, category=UserWarning)


def setup(device: str = "auto", quick: bool = False, seed: int = 0) -> torch.device:
    """Call once after the parameters cell: picks the device, sets the measuring mode, seeds."""
    if not isinstance(quick, bool):
        raise TypeError(f"QUICK must be True or False, got {quick!r}")
    bench.configure(quick)
    quiet_library_notices()
    seed_everything(seed)
    dev = pick_device(device)
    print(f"device: {device_name(dev)} | torch {torch.__version__} | {'QUICK' if quick else 'full'} mode")
    return dev
