"""Setup for notebook 08 (compile and fuse): Inductor's cache folder, first-call timing, Dynamo's
logs as lines, the feed-forward block, and small readers of what Dynamo compiled. The lessons
(the formulas, the compiled functions, the graph breaks) are in the notebook.
"""
from __future__ import annotations

import contextlib
import io
import math
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator

import torch
import torch._dynamo
from torch import nn


def private_inductor_cache() -> str:
    """A new, empty folder for Inductor's on-disk cache (TORCHINDUCTOR_CACHE_DIR), so that this
    process's compile times are those of a cold start; the caller removes it at the end."""
    folder = tempfile.mkdtemp(prefix="course08-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
    return folder


def with_warnings(fn: Callable[[], object]) -> tuple[object, list[str]]:
    """``fn()``'s result and the warnings it raised, each as 'Category: message'."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught]


LOG_PREFIX = re.compile(r"^[VIWE]\d{4} \S+ +\d+ \S+\] ")


@contextlib.contextmanager
def dynamo_logs(**artifacts) -> Iterator[list[str]]:
    """What TORCH_LOGS would print (say ``recompiles=True``, ``graph_breaks=True``), collected as
    lines instead of going to stderr; Dynamo's own warnings are collected too."""
    lines, buffer = [], io.StringIO()
    with contextlib.redirect_stderr(buffer):
        torch._logging.set_logs(**artifacts)
        try:
            yield lines
        finally:
            torch._logging.set_logs()
            lines += [LOG_PREFIX.sub("", line).replace("[__recompiles] ", "").replace("[__graph_breaks] ", "")
                      for line in buffer.getvalue().splitlines() if line.strip()]


class FeedForward(nn.Module):
    """The feed-forward block of a transformer layer, written out: x + W2 activation(W1 LayerNorm(x))."""

    def __init__(self, width: int, activation: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(self.activation(self.up(self.norm(x))))


def break_even_calls(first_s: float, eager_s: float, compiled_s: float) -> int | None:
    """Calls after which compiling has paid for itself: the first call costs ``first_s``, later
    calls ``compiled_s`` against ``eager_s``. None if a compiled call is not faster."""
    if compiled_s >= eager_s:
        return None
    return max(1, math.ceil((first_s - compiled_s) / (eager_s - compiled_s)))


def graphs_compiled() -> int:
    """Graphs Dynamo has compiled in this process so far (its own statistics counter)."""
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def ops_in(report) -> str:
    """The operations of each graph ``torch._dynamo.explain`` found: "tanh mul add | tanh mul add"."""
    return " | ".join(" ".join(getattr(op, "__name__", str(op)) for op in ops) for ops in report.ops_per_graph)


def first_break(fn: Callable, *args) -> list[str] | None:
    """The lines of the error ``fullgraph=True`` raises at ``fn``'s first graph break (backend "eager":
    no code generation), or None when ``fn(*args)`` compiles as one graph."""
    torch._dynamo.reset()
    try:
        with dynamo_logs():
            torch.compile(fn, backend="eager", fullgraph=True)(*args)
    except torch._dynamo.exc.Unsupported as err:
        return [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    finally:
        torch._dynamo.reset()
    return None
