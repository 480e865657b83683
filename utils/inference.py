"""Setup for notebook 11 (inference and serving): the request scorers and conv net it serves, the
image sizes it streams, and the probes behind its tables (what eval() and the autograd guards
change, what an exported program records, what a first call costs). The lessons, the switches and
the serving calls the comparisons time, are in the notebook; this is the scaffolding around them.
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import os
import warnings
from typing import Callable, Iterator

import torch
from torch import nn

from .comparison import Sweep
from .units import format_seconds
from .bench import one_call
from .tables import attempt


# ---------------------------------------------------------------- models and requests

def scorer(features: int, width: int, depth: int, classes: int = 10, p: float = 0.1) -> nn.Sequential:
    """A request scorer: ``depth`` blocks of Linear, BatchNorm1d, ReLU and Dropout, then a Linear."""
    layers, size = [], features
    for _ in range(depth):
        layers += [nn.Linear(size, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Dropout(p)]
        size = width
    return nn.Sequential(*layers, nn.Linear(size, classes))


def demo_scorer(seed: int = 0) -> tuple[nn.Sequential, torch.Tensor, torch.Tensor]:
    """A small scorer whose BatchNorm layers learned the statistics of its data (50 training-mode
    passes), eight requests from that data, and seven other requests that may share their batch."""
    torch.manual_seed(seed)
    model = scorer(16, 32, 2).train()
    with torch.no_grad():
        for _ in range(50):
            model(torch.randn(64, 16) * 2 + 1)
    return model, torch.randn(8, 16) * 2 + 1, torch.randn(7, 16) * 2 + 1


def conv_net() -> nn.Sequential:
    """Four convolutions (7x7 stride 2, 3x3, 5x5 stride 2, 3x3) with BatchNorm and ReLU, pooled into
    a 10-way classifier, in eval mode (seeded). On 64 images of 3x224x224 a call is about 140 GFLOP."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 64, 7, stride=2, padding=3), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 64, 5, stride=2, padding=2), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10),
    ).eval()


# ---------------------------------------------------------------- T102: what the switches change

def behaviour(settings: dict[str, tuple[nn.Module, Callable]], requests: torch.Tensor,
              neighbours: torch.Tensor) -> list[dict]:
    """What a server would notice in each setting ``{label: (model, serve)}``: ``serve(model, x)``
    answers ``requests`` twice, and request 0 once more among ``neighbours``, through a copy of
    ``model`` (in its mode). One row per property, one column per setting."""
    columns = {label: _behaviour(copy.deepcopy(model), serve, requests, neighbours)
               for label, (model, serve) in settings.items()}
    return [{"": name, **{label: found[name] for label, found in columns.items()}} for name in next(iter(columns.values()))]


def _behaviour(model: nn.Module, serve: Callable, requests: torch.Tensor, neighbours: torch.Tensor) -> dict:
    buffers_before = [b.clone() for b in model.buffers()]
    first, second = serve(model, requests), serve(model, requests)
    mixed = serve(model, torch.cat([requests[:1], neighbours]))
    return {"same answer twice": torch.equal(first, second),
            "answer independent of the batch": torch.allclose(first[0], mixed[0], atol=1e-6),
            "BatchNorm statistics changed": any(not torch.equal(a, b) for a, b in zip(buffers_before, model.buffers())),
            "graph kept (grad_fn)": type(first.grad_fn).__name__ if first.grad_fn is not None else "none",
            "inference tensor": first.is_inference()}


# ---------------------------------------------------------------- T103: cudnn.benchmark

def image_sizes(odd: bool, low: int = 208, high: int = 239, seed: int = 0) -> list[tuple[int, int]]:
    """Every (height, width) in [low, high]² whose sum is odd (or even), in a seeded random order:
    two disjoint sets of shapes with the same spread of work, so that two variants never share one."""
    sizes = [(h, w) for h in range(low, high + 1) for w in range(low, high + 1) if (h + w) % 2 == odd]
    order = torch.randperm(len(sizes), generator=torch.Generator().manual_seed(seed)).tolist()
    return [sizes[i] for i in order]


def new_shapes(odd: bool) -> Iterator[tuple[int, int]]:
    """An endless stream of image sizes (height, width), each new to the process until all 512 of
    ``image_sizes(odd)`` have come once."""
    return itertools.cycle(image_sizes(odd))


# ---------------------------------------------------------------- T104: compile and export

def caught_warnings(fn: Callable[[], object]) -> list[dict]:
    """The distinct warnings a call raises (shown as a table: here the warning is the lesson)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    found = dict.fromkeys((w.category.__name__, str(w.message)) for w in caught)
    return [{"warning": category, "message": message} for category, message in found] or [{"warning": "none"}]


def graph_operations(program: torch.export.ExportedProgram) -> str:
    """The operations of an exported graph, each with the training flag it was recorded with."""
    def describe(node) -> str:
        schema = getattr(node.target, "_schema", None)  # ATen operators carry their signature
        if schema is None:
            return getattr(node.target, "__name__", str(node.target))
        flags = [f"{arg.name}={value}" for arg, value in zip(schema.arguments, node.args)
                 if arg.name in ("train", "training")]
        return schema.name.split("::")[-1] + (f"({', '.join(flags)})" if flags else "")
    return ", ".join(sorted({describe(node) for node in program.graph.nodes if node.op == "call_function"}))


def export_facts(model: nn.Module, program, loaded: nn.Module, dynamic, batch: torch.Tensor, path: str) -> dict:
    """What an exported program holds and does, for a table: its operations, the file, its answers
    on a new batch, and what it does with another batch size (fixed and dynamic) and with .eval()."""
    fresh = torch.randn_like(batch)
    half = len(batch) // 2
    with torch.inference_mode():
        gap = (loaded(fresh) - model(fresh)).abs().max().item()
        shapes = [tuple(dynamic.module()(fresh[:n]).shape) for n in (1, half + 1)]
    return {"operations in the graph": graph_operations(program),
            "the .pt2 file": f"{os.path.getsize(path) / 2**20:.1f} MiB",
            "loaded(new batch) - model(new batch)": f"{gap:.2g} at most",
            f"loaded(half the batch: {half} rows)": attempt(lambda: loaded(fresh[:half]), ok="works"),
            "loaded.eval()": attempt(loaded.eval, ok="works"),
            f"dynamic(1 row), dynamic({half + 1} rows)": shapes}


def one_call_seconds(fn: Callable[[], object], device: torch.device) -> float:
    """One call under ``inference_mode``, timed once (``bench.one_call``): for a first call, which a
    median of many cannot time. Later calls run in the same mode, so they hit the same compiled code."""
    def inferred():
        with torch.inference_mode():
            return fn()
    return one_call(inferred, device)


def first_calls(call: Callable[[int], object], sizes: list[int], device: torch.device) -> list[dict]:
    """``call(n)`` at each batch size of ``sizes`` in turn, each timed once: what a compiled model
    pays at a size it has not served before, and at one it has."""
    rows, seen = [], set()
    for n in sizes:
        rows.append({"batch size": n, "served before": n in seen,
                     "this call": format_seconds(one_call_seconds(lambda: call(n), device))})
        seen.add(n)
    return rows


# ---------------------------------------------------------------- T106: batching

def latency_view(sweep: Sweep, title: str = "latency: time of one call, by batch size") -> Sweep:
    """The same sweep read as time per call instead of requests per second: how long a request
    waits for its answer (one batch call; one request per call, the last of the queue)."""
    return dataclasses.replace(sweep, rate=None, title=title)
