"""Setup for notebook 00 (measure first): one draw from each random generator, the runner of the
CUDA_VISIBLE_DEVICES child processes, single synchronized calls of T005, assert_close outcomes and
the project's pins. The lessons (the seeding, the child's own lines, the clocks) are in the
notebook; this is the scaffolding around them.
"""
from __future__ import annotations

import inspect
import json
import math
import os
import random
import re
import subprocess
import sys
import textwrap
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
from .tables import Table
from .units import format_ratio, format_seconds


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


# ---------------------------------------------------------------- T003

CHILDREN = {"before": "CUDA_VISIBLE_DEVICES set before import torch",
            "after": "set after is_available()",
            "nvml": "as after, with PYTORCH_NVML_BASED_CUDA_CHECK=1"}
# Appended to the child's source: call it, keep what it saw before an error, print it as JSON.
_CALL = """
import json, sys
seen = {{}}
try:
    {name}(sys.argv[1], seen)
except Exception as err:
    first = (str(err).strip().splitlines() or [""])[0].split(". ")[0][:60]
    seen["tensor on cuda"] = type(err).__name__ + ": " + first
print(json.dumps(seen, default=str))
"""


def visibility_children(child: Callable[[str, dict], None], run: bool | None = None, timeout: float = 120) -> Table:
    """Run ``child(when, seen)``, a function of the notebook, in three fresh Pythons side by side (so
    this kernel's CUDA state cannot leak in), one per key of ``CHILDREN``; the "nvml" one with
    ``PYTORCH_NVML_BASED_CUDA_CHECK=1``. The child fills ``seen`` as it goes; an error it raises
    fills the column "tensor on cuda". One row each. ``run=False`` lists them without starting them:
    three torch imports cost seconds on a small CPU. By default (``None``) they run unless the
    notebook is in QUICK mode without a usable GPU, where every child fails alike (then the table
    is folded: nothing to read but its caption)."""
    if run is None:
        run = torch.cuda.is_available() or not is_quick()
    caption = 'CUDA_VISIBLE_DEVICES="" in three fresh processes'
    if not run:
        return Table([{"child": when, "what it does": what} for when, what in CHILDREN.items()],
                     caption="Children: not run (QUICK, no GPU)", folded=True)
    script = textwrap.dedent(inspect.getsource(child)) + _CALL.format(name=child.__name__)
    procs = {}
    for when in CHILDREN:
        env = {k: v for k, v in os.environ.items() if k != "PYTORCH_NVML_BASED_CUDA_CHECK"}
        if when == "nvml":
            env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        procs[when] = subprocess.Popen([sys.executable, "-c", script, when], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, env=env)
    rows = []
    for when, proc in procs.items():
        out, err = proc.communicate(timeout=timeout)
        lines = out.strip().splitlines()
        if proc.returncode == 0 and lines:
            seen = json.loads(lines[-1])
        else:  # the child itself broke: show why instead of a row of guesses
            seen = {"tensor on cuda": f"child failed ({proc.returncode}): {err.strip()[-80:]}"}
        rows.append({"child": when, **seen})
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


# ---------------------------------------------------------------- T007

def assert_close_outcome(actual: torch.Tensor, expected: torch.Tensor, **tolerances) -> str:
    """'passes', or 'fails:' and what failed, short: the mismatched count, the attribute that differs
    (dtype, device, shape), or the first sentence of assert_close's message."""
    try:
        torch.testing.assert_close(actual, expected, **tolerances)
        return "passes"
    except AssertionError as err:
        lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
        mismatched = next((line for line in lines if line.startswith("Mismatched elements:")), None)
        if mismatched:
            return "fails: " + mismatched.removeprefix("Mismatched elements:").strip().split(" (")[0] + " mismatched"
        first = lines[0] if lines else ""
        attribute = re.search(r"attribute '(\w+)'", first)
        return f"fails: {attribute[1]} differs" if attribute else "fails: " + first_sentence(first, 60)


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
    matching = sum(row["matches"] is True for row in rows)
    return Table(rows, caption=f"{pyproject.name}: {matching} of {len(rows)} pins match"
                               + ("" if rows else f" ({pyproject} not found)"), folded=True)
