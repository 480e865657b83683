"""Setup for notebook 08 (compile and fuse): Inductor's cache folder, Dynamo's logs as lines, the
feed-forward block, and small readers of what Dynamo compiled. The lessons (the formulas, the
``torch.compile`` calls, the graph breaks, ``fullgraph=True``) are in the notebook.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
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


LOG_PREFIX = re.compile(r"^[VIWE]\d{4} \S+ +\d+ \S+\] ")


@contextlib.contextmanager
def dynamo_logs(**artifacts) -> Iterator[list[str]]:
    """The lines Dynamo logs to stderr while the block runs, collected instead of printed: turn on
    what TORCH_LOGS would (``torch._logging.set_logs(recompiles=True)``) inside the block, or pass
    it here (``recompiles=True``, ``graph_breaks=True``). Dynamo's own warnings are collected too;
    every log is switched off again at the end."""
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


def graphs_compiled() -> int:
    """Graphs Dynamo has compiled in this process so far (its own statistics counter)."""
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def ops_in(report) -> str:
    """The operations of each graph ``torch._dynamo.explain`` found: "tanh mul add | tanh mul add"."""
    return " | ".join(" ".join(getattr(op, "__name__", str(op)) for op in ops) for ops in report.ops_per_graph)
