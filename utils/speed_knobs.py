"""Helpers for notebook 07 (GPU speed knobs): read PyTorch's global backend switches, supply input
shapes that never repeat (to show what the cuDNN autotuner costs when every batch has a new
shape), and the models, inputs and measuring aids around the comparisons. The knobs themselves
(``torch.backends.cudnn.benchmark``, the autocast and GradScaler loop, the TF32 switches) are set
in the notebook, where the learner sees them; this is the scaffolding around them.

The precision switches use the API of PyTorch 2.9 and later (``fp32_precision``). The older
switches (``torch.backends.cuda.matmul.allow_tf32``, ``torch.backends.cudnn.allow_tf32``,
``torch.set_float32_matmul_precision``) still work but must not be mixed with the new ones: once
both have been used, reading the precision with the old getter raises an error. This module
only reads the new ones.
"""
from __future__ import annotations

import copy
import itertools
from typing import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

from .bench import one_call
from .tables import Table
from .units import format_seconds

# ---------------------------------------------------------------- switches

def flags() -> dict[str, object]:
    """The current value of each switch this notebook turns (read from torch, not assumed)."""
    return {
        "torch.backends.cudnn.benchmark": torch.backends.cudnn.benchmark,
        "torch.backends.cudnn.deterministic": torch.backends.cudnn.deterministic,
        "torch.backends.cuda.matmul.fp32_precision": torch.backends.cuda.matmul.fp32_precision,
        "torch.backends.cudnn.conv.fp32_precision": torch.backends.cudnn.conv.fp32_precision,
        "torch.backends.fp32_precision": torch.backends.fp32_precision,
    }


def device_facts(device: torch.device) -> Table:
    """What this device offers for the notebook's knobs, read from torch."""
    facts: dict[str, object] = {}
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        facts.update({"compute capability": f"{major}.{minor}",
                      "float16 Tensor Cores (7.0, Volta, and newer)": major >= 7,
                      "bfloat16 and TF32 Tensor Cores (8.0, Ampere, and newer)": major >= 8,
                      "cuDNN version": torch.backends.cudnn.version()})
    elif device.type == "cpu":
        facts.update({"bfloat16 matrix hardware": cpu_bf16_hardware(),
                      "oneDNN (mkldnn) kernels": torch.backends.mkldnn.is_available()})
    facts.update({name: repr(value) for name, value in flags().items()})
    return Table(facts, caption="This device, and PyTorch's global switches at the start, read from torch")


def cpu_bf16_hardware() -> str:
    """What this CPU offers for bfloat16 matrix products, in words (from torch's own CPU checks)."""
    checks = (("AMX tiles", "_is_amx_tile_supported"), ("AVX512-BF16", "_is_avx512_bf16_supported"))
    present = [name for name, fn in checks if getattr(torch.cpu, fn, lambda: False)()]
    capability = torch.backends.cpu.get_cpu_capability()
    if present:
        return f"{' and '.join(present)} (vector capability {capability}): native bfloat16 matrix instructions"
    return f"no AMX or AVX512-BF16 (vector capability {capability}): no native bfloat16 matrix instructions"


# ---------------------------------------------------------------- inputs

def fresh_shapes(pixels: int, batches: range = range(24, 41), heights: range = range(48, 97)
                 ) -> Iterator[tuple[int, int, int]]:
    """Endless (batch, height, width) triples, never the same one twice, each with about ``pixels``
    pixels in all (batch * height * width within a few percent of it), so every call does about the
    same work. After every (batch, height) pair has been used, the widths move on by one step."""
    pairs = [(n, h) for h in heights for n in batches]
    for step in itertools.count():
        for n, h in pairs:
            yield n, h, max(1, round(pixels / (n * h))) + step


def fresh_batches(pixels: int, channels: int, device: torch.device | str) -> Iterator[torch.Tensor]:
    """Endless random image batches (N x channels x H x W) in shapes from ``fresh_shapes``."""
    for n, h, w in fresh_shapes(pixels):
        yield torch.randn(n, channels, h, w, device=device)


def square_stack(n: int, flops: float, dtype: torch.dtype, device: torch.device | str,
                 size: int | None = None) -> torch.Tensor:
    """A batch of random ``size`` x ``size`` matrices (default ``n``), as many as multiplying
    ``n`` x ``n`` matrices in ``flops`` needs (at least one): each size then does about the same
    arithmetic, so a small size is not just a short call."""
    size = n if size is None else size
    return torch.randn(stack_count(n, flops), size, size, dtype=dtype, device=device)


def stack_count(n: int, flops: float) -> int:
    """How many n x n products (2 n^3 operations each) make about ``flops`` operations."""
    return max(1, round(flops / (2 * n ** 3)))


# ---------------------------------------------------------------- models

def conv_block(c_in: int, c_out: int, stride: int = 1) -> list[nn.Module]:
    """A 3x3 convolution (no bias), BatchNorm and ReLU."""
    return [nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(c_out),
            nn.ReLU(inplace=True)]


def conv_net(width: int, stages: int = 3) -> nn.Sequential:
    """A small VGG/ResNet-style network: ``stages`` stages of two conv blocks, the channels doubling
    and the resolution halving from one stage to the next, then a linear classifier (10 classes)."""
    layers, c_in = [], 3
    for stage in range(stages):
        c_out = width * 2 ** stage
        layers += conv_block(c_in, c_out, stride=1 if stage == 0 else 2) + conv_block(c_out, c_out)
        c_in = c_out
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, 10))


def mlp(*sizes: int) -> nn.Sequential:
    """Linear layers of the given sizes with ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        layers += [nn.Linear(n_in, n_out)] + ([nn.ReLU()] if i < len(sizes) - 2 else [])
    return nn.Sequential(*layers)


def encoder(d_model: int, heads: int, ff: int, layers: int) -> nn.TransformerEncoder:
    """A BERT-like transformer encoder (batch first, no dropout)."""
    layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def training_flops(model: nn.Module, samples: int) -> float:
    """Arithmetic of a training pass over ``samples`` through ``model``'s Linear layers: 2 per
    multiply-add, forward once and backward twice (input and weight gradients)."""
    return 6.0 * samples * sum(m.in_features * m.out_features for m in model.modules() if isinstance(m, nn.Linear))


# ---------------------------------------------------------------- steps

def gradient_step(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor,
                  autocast_dtype: torch.dtype | None = None) -> Callable[[], tuple[torch.Tensor, ...]]:
    """A function computing the gradients of ``cross_entropy(model(inputs), labels)`` (forward and
    backward, no optimizer), under autocast when ``autocast_dtype`` is given."""
    params = list(model.parameters())

    def step():
        with torch.autocast(inputs.device.type, dtype=autocast_dtype or torch.float32,
                            enabled=autocast_dtype is not None):
            loss = F.cross_entropy(model(inputs), labels)
        return torch.autograd.grad(loss, params)
    return step


def backward_pass(net: nn.Module, images: torch.Tensor, setting: Callable[[], object]
                  ) -> Callable[[], tuple[torch.Tensor, ...]]:
    """A function that runs only the backward pass through a copy of ``net`` (in training mode) on
    ``images``, after calling ``setting()`` (a function of the notebook's that sets cuDNN's
    switches). Its first call builds the float16 (autocast) graph, after the same setting, and
    keeps it; every call then backpropagates through it again."""
    graph: dict = {}

    def run():
        setting()
        if not graph:
            model = copy.deepcopy(net).train()
            with torch.autocast(images.device.type, dtype=torch.float16):
                graph["loss"] = model(images).float().logsumexp(dim=1).mean()
            graph["params"] = list(model.parameters())
        return torch.autograd.grad(graph["loss"], graph["params"], retain_graph=True)
    return run


def search_cost(heuristic: Callable[[], torch.Tensor], autotuned: Callable[[], torch.Tensor],
                device: torch.device) -> dict[str, str]:
    """The first call of each of two fresh cuDNN configurations (wall time, so it includes any
    autotuner search), after a warm-up in a third configuration; then a check that both compute
    the same output, and the largest difference between them. CUDA only."""
    torch.backends.cudnn.deterministic = True   # a third configuration, used once, warms up cuDNN
    try:
        heuristic()
    finally:
        torch.backends.cudnn.deterministic = False
    first = {name: one_call(fn, device) for name, fn in (("heuristic", heuristic), ("autotuned", autotuned))}
    out_h, out_a = heuristic().float(), autotuned().float()
    torch.testing.assert_close(out_a, out_h, rtol=2e-2, atol=2e-2)   # the same computation
    return {"first_heuristic": format_seconds(first["heuristic"]), "first_autotuned": format_seconds(first["autotuned"]),
            "output_gap": f"{(out_a - out_h).abs().max().item():.2g}"}


def relative_error(out: torch.Tensor, exact: torch.Tensor) -> float:
    """Largest absolute difference from ``exact``, relative to ``exact``'s largest value."""
    return ((out.double() - exact).abs().max() / exact.abs().max()).item()


def errors_against(exact: Callable[[], torch.Tensor], **outputs: Callable[[], torch.Tensor]) -> dict[str, float]:
    """``relative_error`` of each named function's output against ``exact()`` (computed once)."""
    reference = exact()
    return {name: relative_error(fn(), reference) for name, fn in outputs.items()}


# ---------------------------------------------------------------- GradScaler and model.half() (T088)

_SCALE_CHANGE = {0.5: "halved", 1.0: "kept", 2.0: "doubled"}


def scaler_row(step: int, batch: str, loss: torch.Tensor, used: float, scaler: torch.amp.GradScaler,
               model: nn.Module, before: list[torch.Tensor]) -> dict[str, object]:
    """One row of the GradScaler demo, read after ``scaler.update()`` from the scaler and the
    weights: the scale the step used (``used``, read before it), whether the unscaled gradients
    were finite, whether the optimizer stepped (the weights differ from ``before``), and what
    ``update()`` did to the scale."""
    after = scaler.get_scale()
    finite = all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None)
    stepped = any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))
    return {"step": step, "batch": batch, "loss": f"{loss.item():.3g}", "scale used": f"{used:g}",
            "gradients finite": finite, "optimizer step": "taken" if stepped else "skipped",
            "update()": f"{_SCALE_CHANGE.get(after / used, f'x{after / used:g}')}: {after:g}"}


def fine_tuning_task(features: int, samples: int, device: torch.device | str, shift: float = 0.05,
                     noise: float = 0.01, seed: int = 0) -> tuple[nn.Linear, torch.Tensor, torch.Tensor]:
    """A "pretrained" linear layer (no bias, weights drawn from N(0, 1), so most lie within +-2) and
    data whose targets come from weights ``shift`` away from it (times N(0, 1)), plus ``noise``:
    fine-tuning it with a small learning rate asks for updates far smaller than the weights, the
    case in which float16 weights lose them. Returns ``(layer, inputs, targets)``, float32 on ``device``."""
    generator = torch.Generator().manual_seed(seed)
    weights = torch.randn(1, features, generator=generator)
    inputs = torch.randn(samples, features, generator=generator)
    target_weights = weights + shift * torch.randn(1, features, generator=generator)
    targets = inputs @ target_weights.T + noise * torch.randn(samples, 1, generator=generator)
    layer = nn.Linear(features, 1, bias=False)
    with torch.no_grad():
        layer.weight.copy_(weights)
    return layer.to(device), inputs.to(device), targets.to(device)
