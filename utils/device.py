"""Device choice, environment report and seeding (tips T001-T004)."""
from __future__ import annotations

import os
import platform
import random
import warnings
from pathlib import Path

import torch

_CHOICES = ("auto", "cpu", "cuda", "mps")


def pick_device(preference: str | torch.device = "auto") -> torch.device:
    """Return the device to run on: the fastest available for "auto", else the one asked for.

    A device that is asked for by name but is missing raises a clear error instead of
    silently falling back, so a GPU run never quietly measures the CPU.
    """
    if isinstance(preference, torch.device):
        preference = str(preference)
    if not isinstance(preference, str):
        raise TypeError(f"device preference must be a string such as 'auto', got {preference!r}")
    pref = preference.strip().lower()
    if pref == "auto":
        if _cuda_usable():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    kind = pref.split(":")[0]
    if kind not in _CHOICES:
        raise ValueError(f"unknown device {preference!r}: use one of {', '.join(_CHOICES)} (optionally 'cuda:N')")
    if kind == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {preference!r} was requested but CUDA is not available here; use 'auto' or 'cpu'")
    if kind == "mps" and not _mps_available():
        raise RuntimeError(f"device {preference!r} was requested but MPS is not available here; use 'auto' or 'cpu'")
    dev = torch.device(pref)
    if kind == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise RuntimeError(f"{preference!r} does not exist: {torch.cuda.device_count()} CUDA device(s) visible")
    return dev


def _cuda_usable() -> bool:
    """``torch.cuda.is_available()``, but loud when an NVIDIA GPU is present and CUDA still fails
    (driver too old for this build, wrong permissions): "auto" must not quietly measure the CPU."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = torch.cuda.is_available()
    if not available and torch.version.cuda and nvidia_gpu_present():
        why = "; ".join(str(w.message).strip() for w in caught) or "torch.cuda.is_available() is False"
        warnings.warn(f"An NVIDIA GPU is present but this PyTorch (built for CUDA {torch.version.cuda}) "
                      f"cannot use it, so DEVICE='auto' falls back to the CPU. Cause: {why}. Check `nvidia-smi` "
                      f"and that the driver supports CUDA {torch.version.cuda} (see the README).",
                      CudaUnusableWarning, stacklevel=3)
    else:
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return available


class CudaUnusableWarning(UserWarning):
    """A GPU is there but CUDA cannot start: every "GPU" number would really be a CPU number."""


def nvidia_gpu_present() -> bool:
    """The kernel driver exposes an NVIDIA device (independent of whether CUDA can start)."""
    return Path("/proc/driver/nvidia/gpus").is_dir() or Path("/dev/nvidia0").exists()


def synchronize(device: torch.device | str) -> None:
    """Wait until the device has run the work queued on it (a CPU op is done when it returns)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())


def device_name(device: torch.device | str) -> str:
    """A human name for the device: the GPU model, or the CPU architecture."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple GPU (MPS)"
    return f"CPU ({platform.machine()}, {torch.get_num_threads()} threads)"


def env_report() -> dict[str, str]:
    """Versions and hardware in one dict (T001): paste it into every bug report and benchmark."""
    report = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": _version_of("torchvision"),
        "platform": platform.platform(),
        "cpu threads": str(torch.get_num_threads()),
        "CUDA available": str(torch.cuda.is_available()),
        "CUDA (torch built with)": str(torch.version.cuda),
        "cuDNN": str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else "n/a",
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)"),
    }
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            report[f"cuda:{i}"] = f"{props.name}, {props.total_memory / 2**30:.1f} GiB"
    return report


def _version_of(module: str) -> str:
    try:
        return __import__(module).__version__
    except ImportError:
        return "not installed"


def seed_everything(seed: int = 0, deterministic: bool = False) -> None:
    """Seed Python, NumPy and torch on every device (T002).

    deterministic=True also asks cuDNN and torch for deterministic kernels, which can be
    slower; it turns the cuDNN autotuner (``benchmark``) off because autotuning may pick
    a different algorithm from run to run, and sets ``CUBLAS_WORKSPACE_CONFIG`` (unless already
    set) so deterministic cuBLAS matrix products work on CUDA.
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {seed!r}")
    random.seed(seed)
    try:
        import numpy as np
        np.random.seed(seed % 2**32)
    except ImportError:
        pass
    torch.manual_seed(seed)  # seeds CPU and every CUDA device
    torch.backends.cudnn.deterministic = deterministic
    if deterministic:
        torch.backends.cudnn.benchmark = False
        # Deterministic cuBLAS needs a fixed workspace; cuBLAS reads this when its handle is
        # created, so set it before the first matrix product on the GPU (ideally before CUDA starts).
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if torch.are_deterministic_algorithms_enabled() != deterministic:  # the call imports inductor: seconds
        torch.use_deterministic_algorithms(deterministic, warn_only=True)
