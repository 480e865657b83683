"""Helpers for notebook 07 (GPU speed knobs): read and set PyTorch's global backend switches for
one call without leaking them into the rest of the notebook, and supply input shapes that never
repeat (to show what the cuDNN autotuner costs when every batch has a new shape).

The precision switches use the API of PyTorch 2.9 and later (``fp32_precision``). The older
switches (``torch.backends.cuda.matmul.allow_tf32``, ``torch.backends.cudnn.allow_tf32``,
``torch.set_float32_matmul_precision``) still work but must not be mixed with the new ones: once
both have been used, reading the precision with the old getter raises an error. This module
only uses the new ones.
"""
from __future__ import annotations

import contextlib
import itertools
from typing import Iterator

import torch

_UNSET = object()


def flags() -> dict[str, object]:
    """The current value of each switch this notebook turns (read from torch, not assumed)."""
    return {
        "torch.backends.cudnn.benchmark": torch.backends.cudnn.benchmark,
        "torch.backends.cudnn.deterministic": torch.backends.cudnn.deterministic,
        "torch.backends.cuda.matmul.fp32_precision": torch.backends.cuda.matmul.fp32_precision,
        "torch.backends.cudnn.conv.fp32_precision": torch.backends.cudnn.conv.fp32_precision,
        "torch.backends.fp32_precision": torch.backends.fp32_precision,
    }


@contextlib.contextmanager
def backend_flags(*, cudnn_benchmark=_UNSET, cudnn_conv_precision=_UNSET, matmul_precision=_UNSET):
    """Set some global switches for the duration of a ``with`` block, then put the old values back.

    ``cudnn_benchmark``: ``torch.backends.cudnn.benchmark`` (True/False).
    ``cudnn_conv_precision``: ``torch.backends.cudnn.conv.fp32_precision`` ("tf32" or "ieee").
    ``matmul_precision``: ``torch.backends.cuda.matmul.fp32_precision`` ("tf32", "ieee" or "none").
    """
    saved = (torch.backends.cudnn.benchmark, torch.backends.cudnn.conv.fp32_precision,
             torch.backends.cuda.matmul.fp32_precision)
    try:
        if cudnn_benchmark is not _UNSET:
            torch.backends.cudnn.benchmark = bool(cudnn_benchmark)
        if cudnn_conv_precision is not _UNSET:
            torch.backends.cudnn.conv.fp32_precision = cudnn_conv_precision
        if matmul_precision is not _UNSET:
            torch.backends.cuda.matmul.fp32_precision = matmul_precision
        yield
    finally:
        torch.backends.cudnn.benchmark = saved[0]
        torch.backends.cudnn.conv.fp32_precision = saved[1]
        torch.backends.cuda.matmul.fp32_precision = saved[2]


def fresh_shapes(pixels: int, batches: range = range(24, 41), heights: range = range(48, 97)
                 ) -> Iterator[tuple[int, int, int]]:
    """Endless (batch, height, width) triples, never the same one twice, each with about ``pixels``
    pixels in all (batch * height * width within a few percent of it), so every call does about the
    same work. After every (batch, height) pair has been used, the widths move on by one step."""
    pairs = [(n, h) for h in heights for n in batches]
    for step in itertools.count():
        for n, h in pairs:
            yield n, h, max(1, round(pixels / (n * h))) + step


def cpu_bf16_hardware() -> str:
    """What this CPU offers for bfloat16 matrix products, in words (from torch's own CPU checks)."""
    checks = (("AMX tiles", "_is_amx_tile_supported"), ("AVX512-BF16", "_is_avx512_bf16_supported"))
    present = [name for name, fn in checks if getattr(torch.cpu, fn, lambda: False)()]
    capability = torch.backends.cpu.get_cpu_capability()
    if present:
        return f"{' and '.join(present)} (vector capability {capability}): native bfloat16 matrix instructions"
    return f"no AMX or AVX512-BF16 (vector capability {capability}): no native bfloat16 matrix instructions"
