"""Setup for notebook 00 (measure first): one draw from each random generator, the determinism
switches, the CUDA_VISIBLE_DEVICES child processes, single synchronized calls and the clocks of
T005, assert_close outcomes and the project's pins. The lessons are in the notebook; this is the
scaffolding around them.
"""
from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import time
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
from packaging.requirements import Requirement

from .bench import is_quick, one_call
from .device import synchronize
from .tables import Table
from .units import format_number, format_ratio, format_seconds


def first_sentence(message: str, limit: int = 100) -> str:
    """The first sentence of an error message (its first line, up to the first '. '), cut at ``limit``."""
    line = (message.strip().splitlines() or [""])[0]
    sentence = line.split(". ")[0]
    return sentence if len(sentence) <= limit else sentence[:limit - 1] + "…"


# ---------------------------------------------------------------- T002

def draws() -> dict[str, str]:
    """The next number from each global generator: Python's, NumPy's and torch's CPU generator."""
    return {"random.random()": f"{random.random():.6f}", "np.random.rand()": f"{np.random.rand():.6f}",
            "torch.rand(1)": f"{torch.rand(1).item():.6f}"}


def seeded_rand(device: str, seed: int = 0) -> list[float]:
    """``torch.manual_seed(seed)``, then three uniform numbers drawn on ``device``."""
    torch.manual_seed(seed)
    return [round(v, 4) for v in torch.rand(3, device=device).tolist()]


def determinism_flags() -> dict[str, bool]:
    """The three switches of T002, as they are now."""
    return {"cudnn.benchmark": torch.backends.cudnn.benchmark,
            "cudnn.deterministic": torch.backends.cudnn.deterministic,
            "deterministic algorithms": torch.are_deterministic_algorithms_enabled()}


# ---------------------------------------------------------------- T003

# Each child ends with CUDA_VISIBLE_DEVICES="" and then tries what counts: a tensor on cuda.
_CHILD = r"""
import json, os, sys
when = sys.argv[1]
if when == "before":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
import torch
report = {"is_available": torch.cuda.is_available()}
if when != "before":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
report["count_before"] = torch.cuda.device_count()
try:
    report["tensor"] = str(torch.ones(1, device="cuda").device)
except Exception as err:
    first = (str(err).strip().splitlines() or [""])[0].split(". ")[0][:80]
    report["tensor"] = "failed (" + type(err).__name__ + ": " + first + ")"
report["count_after"] = torch.cuda.device_count()
print(json.dumps(report))
"""
CHILDREN = {"before": "sets it before import torch",
            "after": "is_available(), then sets it",
            "nvml": "as after, with PYTORCH_NVML_BASED_CUDA_CHECK=1"}


def visibility_children(run: bool | None = None, timeout: float = 120) -> Table:
    """Run the three T003 children side by side (fresh Pythons, so this kernel's CUDA state cannot
    leak in): one row each, with what is_available() and device_count() said and whether a tensor
    could be created on cuda. ``run=False`` lists them without starting them: three torch imports
    cost seconds on a small CPU. By default (``None``) they run unless the notebook is in QUICK mode
    without a usable GPU, where every child fails alike."""
    if run is None:
        run = torch.cuda.is_available() or not is_quick()
    caption = 'Three processes, each ending with CUDA_VISIBLE_DEVICES="" before it creates a CUDA tensor'
    if not run:
        return Table([{"child": when, "what it does": what, "tensor on cuda": "not run"}
                      for when, what in CHILDREN.items()], caption=caption + " (not run: QUICK mode, no usable GPU)")
    procs = {}
    for when in CHILDREN:
        env = {k: v for k, v in os.environ.items() if k != "PYTORCH_NVML_BASED_CUDA_CHECK"}
        if when == "nvml":
            env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        procs[when] = subprocess.Popen([sys.executable, "-c", _CHILD, when], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, env=env)
    rows = []
    for when, child in procs.items():
        out, err = child.communicate(timeout=timeout)
        lines = out.strip().splitlines()
        if child.returncode == 0 and lines:
            report = json.loads(lines[-1])
        else:  # the child itself broke: show why instead of a row of guesses
            report = {"tensor": f"child failed ({child.returncode}): {err.strip()[-120:]}"}
        rows.append({"child": when, "what it does": CHILDREN[when],
                     "is_available()": report.get("is_available", "-"),
                     "device_count() before the tensor": report.get("count_before", "-"),
                     "tensor on cuda": report["tensor"],
                     "device_count() after": report.get("count_after", "-")})
    return Table(rows, caption=caption)


# ---------------------------------------------------------------- T005

def single_runs(fn: Callable[[], object], device: torch.device, repeats: int | None = None) -> np.ndarray:
    """Seconds of ``repeats`` single calls, each timed honestly but alone (``bench.one_call``:
    synchronize, read ``time.perf_counter()``, call, synchronize, read it again). By default 300
    calls, 100 in QUICK mode (on every device: QUICK shortens timings)."""
    if repeats is None:
        repeats = 100 if is_quick() else 300
    return np.array([one_call(fn, device) for _ in range(repeats)])


def timer_seconds() -> float:
    """The ``min_run_time`` of T005's ``Timer.blocked_autorange``: 1 s, 0.2 s in QUICK mode."""
    return 0.2 if is_quick() else 1.0


def ratio_range(ratios: list[float]) -> str:
    """'0.69x to 1.32x': the smallest and largest of some ratios (zero readings left out)."""
    finite = [r for r in ratios if math.isfinite(r) and r > 0]
    return f"{format_ratio(min(finite))} to {format_ratio(max(finite))}" if finite else "no usable reading"


def spread_figure(seconds: np.ndarray, marks: dict[str, float], title: str):
    """A histogram of single-call times (log axis) with labelled vertical lines at ``marks``."""
    fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
    us = seconds * 1e6
    every = np.concatenate([us, np.array(list(marks.values())) * 1e6])
    ax.hist(us, bins=np.geomspace(every.min() * 0.95, every.max() * 1.05, 60), color="#bdbdbd", log=True)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    for (label, value), color, style in zip(marks.items(), ("#1f77b4", "#d62728", "black", "#2ca02c"),
                                            ("-", "--", ":", "-.")):
        ax.axvline(value * 1e6, color=color, linestyle=style, label=f"{label}: {format_seconds(value)}")
    ax.set_xlabel("time of one call (µs, log scale)")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_ylabel("calls (log scale)")
    fig.legend(fontsize=8, loc="outside lower center", ncol=2)
    fig.suptitle(title, fontsize=10)
    return fig


def clock_readings(fn: Callable[[], object], device: torch.device, flop: float, calls: int = 20) -> list[dict]:
    """Time ``calls`` calls of ``fn`` three ways: ``perf_counter`` without synchronizing (the clock
    stops once the work is queued), ``perf_counter`` after synchronizing, and CUDA events (which
    the GPU timestamps itself; CUDA only). One row per clock, with the FLOP/s each implies."""
    fn()
    synchronize(device)                                        # warm-up done, queue empty
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    unsynchronized = (time.perf_counter() - start) / calls
    synchronize(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize(device)
    synchronized = (time.perf_counter() - start) / calls
    events = None
    if device.type == "cuda":
        with torch.cuda.device(device):                        # events go on the current device's stream
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
        events = begin.elapsed_time(end) / 1e3 / calls         # elapsed_time is in milliseconds

    def row(clock: str, seconds: float | None) -> dict[str, str]:
        return {"clock": clock, "per call": format_seconds(seconds) if seconds else "needs a CUDA GPU",
                "implied GFLOP/s": format_number(flop / seconds / 1e9) if seconds else "-"}
    return [row("perf_counter, no synchronize", unsynchronized), row("perf_counter after synchronize", synchronized),
            row("CUDA events", events)]


# ---------------------------------------------------------------- T007

def assert_close_outcome(actual: torch.Tensor, expected: torch.Tensor, **tolerances) -> str:
    """'passes', or 'fails:' and the first lines of assert_close's message."""
    try:
        torch.testing.assert_close(actual, expected, **tolerances)
        return "passes"
    except AssertionError as err:
        return "fails: " + " ".join(line.strip() for line in str(err).strip().splitlines()[:3])


# ---------------------------------------------------------------- T011

def pins(pyproject: Path) -> Table:
    """Each dependency of ``pyproject`` with its pin, the installed version and whether they match."""
    rows = []
    if pyproject.is_file():
        for line in tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]:
            req = Requirement(line)
            try:
                have = version(req.name)
            except PackageNotFoundError:
                have = "not installed"
            rows.append({"package": req.name, "pinned": str(req.specifier) or "(any)", "installed": have,
                         "matches": have != "not installed" and req.specifier.contains(have, prereleases=True)})
    return Table(rows, caption=f"{pyproject.name}'s pins against the running environment"
                               + ("" if rows else f" ({pyproject} not found)"))
