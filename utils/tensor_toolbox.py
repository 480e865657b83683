"""Setup for notebook 02 (tensor toolbox): what a call returns or raises in one line, the float64
reference behind the pairwise-distance demo, the named-tensor probe, and the figures for
``align_corners`` and Smooth L1. The lessons are in the notebook; this is the scaffolding.
"""
from __future__ import annotations

import warnings
from typing import Callable

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .tables import Table, attempt


def warned(fn: Callable[[], object]) -> dict[str, str]:
    """Call ``fn`` with warnings recorded (not printed): its result (a 0-dim tensor as a number)
    and the category of the first warning it raised ("-" without one)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    if isinstance(out, torch.Tensor) and out.dim() == 0:
        out = f"{out.item():.4f}"
    return {"result": str(out), "warning": caught[0].category.__name__ if caught else "-"}


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors use the same storage (a view and its base do)."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def backward_after_inplace(make_copy: Callable[[torch.Tensor], torch.Tensor]) -> str:
    """``t = w.sigmoid()``, ``c = make_copy(t)``, ``c.zero_()``, then ``t.sum().backward()``: what
    happens: "runs", or "RuntimeError" where backward refuses."""
    w = torch.randn(4, requires_grad=True)
    t = w.sigmoid()                                # sigmoid saves its output for backward
    make_copy(t).zero_()
    try:
        t.sum().backward()
    except RuntimeError:
        return "RuntimeError"
    return "runs"


def distances_float64(a: torch.Tensor, b: torch.Tensor, rows: int = 128) -> torch.Tensor:
    """Exact Euclidean distances in float64, computed directly a few rows of ``a`` at a time (the
    reference the demo's methods are held against)."""
    a64, b64 = a.double(), b.double()
    return torch.cat([(a64[i:i + rows, None] - b64[None]).pow(2).sum(-1).sqrt() for i in range(0, len(a64), rows)])


def max_error(out: torch.Tensor, truth: torch.Tensor) -> str:
    """The largest absolute error of the finite entries, in two significant figures."""
    finite = out.isfinite()
    return f"{(out.double() - truth)[finite].abs().max().item():.1e}"


def accuracy_table(methods: dict[str, Callable], a: torch.Tensor, b: torch.Tensor, caption: str) -> Table:
    """Each method's distances from ``a`` to ``b`` against float64: NaNs and the largest error; the
    caption gives the mean true distance of each point to its twin (``a[i]`` to ``b[i]``)."""
    truth = distances_float64(a, b)
    rows = []
    for label, fn in methods.items():
        out = fn(a, b).double()
        rows.append({"method": label, "NaN entries": int(out.isnan().sum()), "max |error|": max_error(out, truth)})
    return Table(rows, caption=f"{caption}: twins {truth.diagonal().mean().item():.4f} apart")


def named_tensors() -> Table:
    """Whether this PyTorch still has named tensors, and what they did where it does."""
    available = hasattr(torch.Tensor, "refine_names")
    rows = {"torch": torch.__version__, "named tensors": "available (prototype)" if available else "removed"}
    if available:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)   # the API's "experimental feature" notice
            imgs = torch.randn(2, 3, 4, 3, names=("N", "C", "H", "W"))
            gain = torch.randn(3, names=("C",))
            rows["imgs * gain"] = attempt(lambda: imgs * gain)
            rows["(imgs * gain.align_as(imgs)).names"] = (imgs * gain.align_as(imgs)).names
    else:
        rows["torch.randn(2, 3, names=('N', 'C'))"] = attempt(lambda: torch.randn(2, 3, names=("N", "C")), brief=True)
    return Table(rows, caption=f"Named tensors in torch {torch.__version__}: {rows['named tensors']}", folded=True)


def source_positions(n_in: int, n_out: int, align_corners: bool) -> torch.Tensor:
    """Where each of ``n_out`` output pixels samples the input, in input pixel units (the two
    conventions' formulas, written out)."""
    j = torch.arange(n_out, dtype=torch.float32)
    if align_corners:
        return j * (n_in - 1) / (n_out - 1)
    return ((j + 0.5) * n_in / n_out - 0.5).clamp(0, n_in - 1)


def sample_linear(values: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Linear interpolation of 1-D ``values`` at fractional ``positions``, by hand."""
    lo = positions.floor().long().clamp(max=len(values) - 2)
    frac = positions - lo
    return values[lo] * (1 - frac) + values[lo + 1] * frac


def align_corners_figure(n_in: int, n_out: int) -> Figure:
    """Input and output pixels on one axis, for both conventions: points (True) and squares (False)."""
    fig = Figure(figsize=(8, 3.4), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    size = n_in / n_out
    for ax, align in zip(axes, (True, False)):
        out = source_positions(n_in, n_out, align).tolist() if align else [(j + 0.5) * size - 0.5 for j in range(n_out)]
        if not align:
            for i in range(n_in):
                ax.add_patch(Rectangle((i - 0.5, 0.75), 1, 0.5, fill=False, ec="#9e9e9e", lw=2))
            for c in out:
                ax.add_patch(Rectangle((c - size / 2, -0.25), size, 0.5, fill=False, ec="#1f77b4", lw=1.5))
        ax.plot(range(n_in), [1] * n_in, "o", ms=11 if align else 4, color="#9e9e9e")
        ax.plot(out, [0] * n_out, "o", ms=7 if align else 4, color="#1f77b4")
        ax.set_title("align_corners=True: pixels are points, the corner centres coincide" if align else
                     "align_corners=False: pixels are squares, the outer edges coincide", fontsize=10)
        ax.set_yticks([0, 1], [f"output ({n_out})", f"input ({n_in})"])
        ax.set_ylim(-0.6, 1.6)
        for x in (0, n_in - 1):
            ax.axvline(x, ls=":", c="k", lw=0.8)
    axes[1].set_xlabel("position in input pixel units (dotted: centres of the first and last input pixels)")
    fig.suptitle(f"T036: where {n_out} output pixels sample {n_in} input pixels", fontsize=10)
    return fig


def smooth_l1_source(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """The source write-up's formula: 0.5 (sigma^2 x)^2 in the quadratic branch."""
    s2 = sigma ** 2
    return torch.where(x.abs() < 1 / s2, 0.5 * (s2 * x) ** 2, x.abs() - 0.5 / s2)


def smooth_l1_rows(sigma_form: Callable[[torch.Tensor, float], torch.Tensor],
                   sigmas: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0)) -> list[dict]:
    """For each sigma: the gap between ``sigma_form(x, sigma)`` (Faster R-CNN's smooth L1, written in
    the notebook) and ``F.smooth_l1_loss(beta=1/sigma^2)``, between Huber and beta times smooth L1, and
    the source formula's two sides at the switch point."""
    x = torch.linspace(-3, 3, 6001, dtype=torch.float64)
    zero = torch.zeros_like(x)
    rows = []
    for sigma in sigmas:
        beta = 1 / sigma ** 2
        torch_loss = F.smooth_l1_loss(x, zero, beta=beta, reduction="none")
        huber = F.huber_loss(x, zero, delta=beta, reduction="none")
        edge = smooth_l1_source(torch.tensor([beta * (1 - 1e-9), beta * (1 + 1e-9)], dtype=torch.float64), sigma)
        rows.append({"sigma": sigma, "beta = 1/sigma^2": f"{beta:.4f}",
                     "max |f_sigma - smooth_l1(beta)|": f"{(sigma_form(x, sigma) - torch_loss).abs().max().item():.1e}",
                     "max |huber(delta=beta) - beta * smooth_l1|": f"{(huber - beta * torch_loss).abs().max().item():.1e}",
                     "source formula at |x| = beta, left / right": f"{edge[0].item():.4f} / {edge[1].item():.4f}"})
    return rows


def smooth_l1_figure() -> Figure:
    """PyTorch's smooth L1 for sigma 1 and 3, the source formula for sigma 3 (it jumps), and |x|."""
    fig = Figure(figsize=(6, 3.2), layout="constrained")
    ax = fig.subplots()
    xs = torch.linspace(-2, 2, 801)
    for sigma in (1.0, 3.0):
        ax.plot(xs, F.smooth_l1_loss(xs, torch.zeros_like(xs), beta=1 / sigma ** 2, reduction="none"),
                label=f"smooth_l1_loss, beta={1 / sigma ** 2:.3g} (sigma={sigma:g})")
    ax.plot(xs, smooth_l1_source(xs, 3.0), "--", label="source formula, sigma=3 (jumps)")
    ax.plot(xs, xs.abs(), ":", c="k", lw=0.8, label="|x|")
    ax.set_xlabel("x = prediction - target")
    ax.set_ylim(0, 2)
    ax.legend(fontsize=8)
    fig.suptitle("T037: smooth L1, quadratic below beta and linear above", fontsize=10)
    return fig
