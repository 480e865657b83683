"""Setup for notebook 04 (the training loop): the toy problem, small models, the training plumbing
around each tip, and the figures. The tips themselves are in the notebook; this is the scaffolding.

The toy problem: four classes, twenty features, labels from a fixed random linear "teacher" plus
noise, so a small MLP can learn them, but not perfectly.
"""
from __future__ import annotations

import importlib.util
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from .memory import held_memory
from .units import format_bytes

if importlib.util.find_spec("ipywidgets") is not None:
    from tqdm.auto import tqdm  # noqa: F401  (a widget in Jupyter, a text bar in a terminal)
else:  # tqdm.auto would fall back to the text bar too, after a warning on stderr
    from tqdm.std import tqdm  # noqa: F401

D_IN, N_CLASSES = 20, 4
TEACHER = torch.randn(D_IN, N_CLASSES, generator=torch.Generator().manual_seed(1234))
NORM_TYPES = (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)


# ---------------------------------------------------------------- the toy problem

def make_data(n: int, seed: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` samples of the toy problem (inputs, class labels), the same for the same seed."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, D_IN, generator=g)
    y = (x @ TEACHER + 0.5 * torch.randn(n, N_CLASSES, generator=g)).argmax(1)
    return x.to(device), y.to(device)


def make_mlp(hidden: int = 64, seed: int = 0, device: torch.device | str = "cpu") -> nn.Sequential:
    """A three-layer MLP for the toy problem (seeded)."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(D_IN, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, N_CLASSES)).to(device)


def mlp_with_norms(kind: str = "batch", seed: int = 3, device: torch.device | str = "cpu") -> nn.Sequential:
    """An MLP with normalization layers: one BatchNorm1d (``kind="batch"``), or a LayerNorm and a
    BatchNorm1d (``kind="both"``)."""
    torch.manual_seed(seed)
    if kind == "batch":
        layers = [nn.Linear(D_IN, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, N_CLASSES)]
    else:
        layers = [nn.Linear(D_IN, 32), nn.LayerNorm(32), nn.ReLU(), nn.Linear(32, 32), nn.BatchNorm1d(32),
                  nn.ReLU(), nn.Linear(32, N_CLASSES)]
    return nn.Sequential(*layers).to(device)


def batches(x: torch.Tensor, y: torch.Tensor, batch_size: int, seed: int | None = None):
    """Yield (inputs, targets) mini-batches; shuffled by a private generator when a seed is given,
    so a run can be repeated (and resumed, T064) exactly."""
    if seed is None:
        order = torch.arange(len(x), device=x.device)
    else:
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed)).to(x.device)
    for i in range(0, len(x), batch_size):
        idx = order[i:i + batch_size]
        yield x[idx], y[idx]


@torch.inference_mode()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Accuracy on (x, y), in eval mode and without recording a graph."""
    model.eval()
    return (model(x).argmax(1) == y).float().mean().item()


def flat_grad(model: nn.Module) -> torch.Tensor:
    """Every parameter's gradient, as one vector."""
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def relative_difference(a: torch.Tensor, b: torch.Tensor) -> str:
    """|a - b| / |b|, two significant figures."""
    return f"{((a - b).norm() / b.norm()).item():.1e}"


# ---------------------------------------------------------------- T054, T055: logging and resetting

def saved_activation_bytes(model: nn.Module, loss_fn, x: torch.Tensor, y: torch.Tensor) -> int:
    """What one forward pass saves for backward, counted by a ``saved_tensors_hooks`` pack hook:
    new tensors only (the weights and the batch exist anyway)."""
    existing = {t.untyped_storage().data_ptr() for t in [*model.parameters(), x, y]}
    saved = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in existing:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss_fn(model(x), y)
    return sum(saved.values())


def held_per_value(cases: dict[str, Callable[[], list]], model: nn.Module, loss_fn, data,
                   device: torch.device) -> list[dict[str, str]]:
    """Rows for a table: the tensor memory the list each case returns still holds once the case has
    returned (``utils.memory.held_memory``), per kept value and against what one forward step saves
    for backward. Gradients are not what is counted: they are set to None around each case."""
    def case_then_reset(case):
        kept = case()
        model.zero_grad()
        return kept

    for case in cases.values():  # first calls allocate library workspaces: not ours to count
        case_then_reset(case)
    saved = saved_activation_bytes(model, loss_fn, *data[0])
    rows = []
    for name, case in cases.items():
        model.zero_grad()
        held, _ = held_memory(lambda: case_then_reset(case), device)
        rows.append({"kept": name, "held per value": format_bytes(held / len(data)),
                     "÷ a step's activations": f"{held / len(data) / saved:.2f}"})
    return rows


def wide_mlp(width: int, layers: int, batch: int, device: torch.device):
    """A wide ReLU MLP, plain SGD over it (weights and gradients, no other state), and a batch."""
    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(layers) for m in (nn.Linear(width, width), nn.ReLU())]).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=1e-4), torch.randn(batch, width, device=device)


def grads_held(model: nn.Module, step: Callable[[], object], reset: Callable[[], object]) -> str:
    """Gradient memory still allocated after ``reset()``, once a training ``step()`` has made every
    gradient: what the next forward pass has to share its memory with."""
    step()
    reset()
    return format_bytes(sum(p.grad.nbytes for p in model.parameters() if p.grad is not None))


# ---------------------------------------------------------------- T057, T060, T061

def clip_effect(model: nn.Module, clip: Callable[[], object]) -> dict[str, str]:
    """What ``clip()`` did to the model's gradients: what it returned, how many elements it
    changed, the gradient's norm before and after, and the cosine between the two gradients."""
    before = flat_grad(model).clone()
    returned = clip()
    after = flat_grad(model)
    return {"returned": "None" if returned is None else f"{returned.item():.3f}",
            "changed": f"{int((after != before).sum())} of {before.numel()}",
            "norm": f"{before.norm().item():.3f} → {after.norm().item():.3f}",
            "cosine": f"{F.cosine_similarity(before, after, dim=0).item():.4f}"}


@dataclass
class Regression:
    """A sparse linear regression: 30 features, only the first 3 matter, few training samples."""
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    w_true: torch.Tensor


def sparse_regression(device: torch.device, features: int = 30, train: int = 40, test: int = 2000) -> Regression:
    g = torch.Generator().manual_seed(0)
    w_true = torch.zeros(features)
    w_true[:3] = torch.tensor([2.0, -3.0, 1.5])

    def draw(n):
        x = torch.randn(n, features, generator=g)
        return x.to(device), (x @ w_true + 0.5 * torch.randn(n, generator=g)).to(device)
    return Regression(*draw(train), *draw(test), w_true)


def weights_table(fits: dict[str, nn.Linear], data: Regression) -> list[dict[str, str]]:
    """Per fit: how many noise weights are near zero, the largest one, the useful ones, test MSE."""
    useful = int((data.w_true != 0).sum())
    rows = []
    for name, lin in fits.items():
        w = lin.weight.detach().squeeze(0).cpu()
        with torch.no_grad():
            mse = F.mse_loss(lin(data.x_test).squeeze(1), data.y_test).item()
        near_zero = int((w[useful:].abs() < 0.05).sum())
        rows.append({"fit": name, "noise |w| < 0.05": f"{near_zero} of {len(w) - useful}",
                     "max noise |w|": f"{w[useful:].abs().max().item():.3f}",
                     "useful w": [round(v, 2) for v in w[:useful].tolist()], "test MSE": f"{mse:.3f}"})
    return rows


def weights_figure(fits: dict[str, nn.Linear], useful: int = 3):
    """Bars of every learned weight, one colour per fit."""
    fig, ax = plt.subplots(figsize=(9, 2.8), layout="constrained")
    n = len(fits)
    for i, (name, lin) in enumerate(fits.items()):
        w = lin.weight.detach().squeeze(0).cpu()
        ax.bar(torch.arange(len(w)) + (i - (n - 1) / 2) * 0.8 / n, w, width=0.8 / n, label=name)
    ax.axvline(useful - 0.5, color="gray", lw=0.8, ls="--")
    ax.set_xlabel(f"feature (left of the dashed line: the {useful} that matter)")
    ax.set_ylabel("learned weight")
    ax.legend(fontsize=8, ncol=n)
    fig.suptitle("T060: L1 pushes the noise weights to (about) zero", fontsize=10)
    return fig


def decay_step_table(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[dict[str, str]]:
    """One optimizer step with zero gradients, so only weight decay can move a parameter: one row
    per parameter group, with its weight_decay, its parameters and the largest relative change
    among them (a parameter of all zeros counts its absolute change)."""
    before = {id(p): p.detach().clone() for p in model.parameters()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    names = {id(p): name for name, p in model.named_parameters()}
    rows = []
    for i, group in enumerate(optimizer.param_groups):
        changes = []
        for p in group["params"]:
            change, size = (p.detach() - before[id(p)]).norm().item(), before[id(p)].norm().item()
            changes.append(change / size if size > 0 else change)
        rows.append({"group": i, "weight_decay": group["weight_decay"],
                     "parameters": ", ".join(names[id(p)] for p in group["params"]),
                     "max change": f"{max(changes):.4f}"})
    return rows


# ---------------------------------------------------------------- T059, T063: figures

def mixup_figure(alphas=(0.2, 1.0)):
    """lam ~ Beta(alpha, alpha) for two alphas, and a blend of two synthetic 32 x 32 images."""
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, 32), torch.linspace(-1, 1, 32), indexing="ij")
    disk, stripes = ((xx**2 + yy**2) < 0.5).float(), (torch.sin(12 * xx) > 0).float()
    fig, axes = plt.subplots(1, 4, figsize=(11, 2.6), gridspec_kw={"width_ratios": [2.2, 1, 1, 1]},
                             layout="constrained")
    for alpha in alphas:
        lam = torch.distributions.Beta(alpha, alpha).sample((4000,))
        axes[0].hist(lam.numpy(), bins=40, alpha=0.6, label=f"alpha={alpha}")
    axes[0].set_title("lam ~ Beta(alpha, alpha)", fontsize=9)
    axes[0].legend(fontsize=8)
    blends = {"x": disk, "x[perm]": stripes, "0.7 x + 0.3 x[perm]": 0.7 * disk + 0.3 * stripes}
    for ax, (title, img) in zip(axes[1:], blends.items()):
        ax.imshow(img.numpy(), cmap="gray", vmin=0, vmax=1)
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    fig.suptitle("T059: mixup", fontsize=10)
    return fig


def synthetic_val_loss(epochs: int) -> list[float]:
    """A validation loss that falls, then stalls (with a little noise), for ReduceLROnPlateau."""
    g = torch.Generator().manual_seed(0)
    return [max(0.3, 1 / (1 + 0.15 * e)) + 0.01 * torch.rand(1, generator=g).item() for e in range(epochs)]


def schedule_figure(curves: dict[str, list[float]], val_loss: list[float], panels: list[list[str]]):
    """One panel per list of curve names; the first panel also shows the validation loss."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 6.2), layout="constrained")
    for i, (ax, names) in enumerate(zip(axes.flat, panels)):
        for name in names:
            ax.plot(curves[name], "o-" if len(panels[i]) > 1 else "-", ms=2.5, label=name)
        if i == 0:
            twin = ax.twinx()
            twin.plot(val_loss, color="gray", lw=1)
            twin.set_ylabel("validation loss (synthetic, gray)", color="gray")
        ax.set_xlabel("epoch")
        ax.set_ylabel("learning rate")
        ax.legend(fontsize=8, loc="upper right")
    fig.suptitle("T063: learning-rate schedules (base lr 0.1), read from param_groups each epoch", fontsize=10)
    return fig


# ---------------------------------------------------------------- T064, T065: checkpoints

@dataclass
class Run:
    """What a training run's state lives in: the model, the optimizer and the scheduler."""
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler


def new_run(seed: int, epochs: int, device: torch.device) -> Run:
    """An MLP with Adam and a cosine schedule over ``epochs``."""
    model = make_mlp(seed=seed, device=device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    return Run(model, optimizer, torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs))


def train_epochs(run: Run, train: tuple, val: tuple, epochs: range, best_acc: float = 0.0,
                 after_epoch: Callable | None = None, loss_fn=F.cross_entropy) -> dict[int, float]:
    """Train ``run`` for ``epochs`` (shuffled by the epoch number, so a resumed run sees the same
    batches); after each, ``after_epoch(run, epoch + 1, best_acc)``. Returns the mean training
    loss of each epoch."""
    losses = {}
    for epoch in epochs:
        run.model.train()
        total = torch.zeros((), device=train[0].device)
        for xb, yb in batches(*train, 64, seed=epoch):
            run.optimizer.zero_grad()
            loss = loss_fn(run.model(xb), yb)
            loss.backward()
            run.optimizer.step()
            total += loss.detach() * len(xb)
        run.scheduler.step()
        losses[epoch] = (total / len(train[0])).item()
        best_acc = max(best_acc, accuracy(run.model, *val))
        if after_epoch is not None:
            after_epoch(run, epoch + 1, best_acc)
    return losses


def resume_figure(curves: dict[str, dict[int, float]], resumed_at: int):
    """Mean training loss by epoch for each run; a dotted line where the runs resume."""
    fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
    for (name, losses), style in zip(curves.items(), ["o-", "x", "s--"]):
        ax.plot(list(losses), list(losses.values()), style, ms=8 if style == "x" else 5, mew=2, label=name)
    ax.axvline(resumed_at - 0.5, color="gray", ls=":", lw=1)
    ax.set_xlabel("epoch")
    ax.set_ylabel("mean training loss")
    ax.legend(fontsize=8)
    fig.suptitle(f"T064: resuming at epoch {resumed_at}", fontsize=10)
    return fig


def zip_entries(path: Path) -> list[dict[str, str]]:
    """Each entry of a ZIP file: its size, whether it is stored uncompressed, and where its bytes
    start, modulo 64 (a local header is 30 bytes plus the name and the extra field)."""
    rows = []
    with zipfile.ZipFile(path) as zf, open(path, "rb") as f:
        for info in zf.infolist():
            f.seek(info.header_offset)
            name_len, extra_len = struct.unpack("<HH", f.read(30)[26:30])
            rows.append({"entry": info.filename, "bytes": info.file_size,
                         "stored uncompressed": info.compress_type == zipfile.ZIP_STORED,
                         "data offset % 64": (info.header_offset + 30 + name_len + extra_len) % 64})
    return rows


def tensor_bytes(obj) -> int:
    """Bytes of every tensor in a nest of dicts, lists and tuples."""
    if isinstance(obj, torch.Tensor):
        return obj.nbytes
    if isinstance(obj, dict):
        return sum(tensor_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(v) for v in obj)
    return 0


def checkpoint_bytes(path: Path) -> dict[str, int]:
    """Where a checkpoint's bytes go: its tensor storages in the archive against the tensors loaded."""
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
    storages = [i for i in infos if "/data/" in i.filename]
    state = torch.load(path)
    return {"entries in the archive": len(infos), "tensor storages (data/N)": len(storages),
            "bytes in data/N entries": sum(i.file_size for i in storages),
            "bytes of the tensors, loaded": tensor_bytes(state), "model tensors": tensor_bytes(state["model"]),
            "optimizer tensors (Adam: 2 moments + step)": tensor_bytes(state["optimizer"]),
            "file size": path.stat().st_size}


# ---------------------------------------------------------------- T067, T069, T070

def imbalanced_predictions(n: int = 1000, classes: int = 3):
    """Labels 80% / 10% / 10%, a predictor that always says class 0, and one that is right 70% of
    the time and guesses otherwise."""
    g = torch.Generator().manual_seed(0)
    truth = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), n, replacement=True, generator=g)
    noisy = torch.where(torch.rand(n, generator=g) < 0.7, truth, torch.randint(0, classes, (n,), generator=g))
    return truth, torch.zeros_like(truth), noisy


def sample_images(curve: dict[int, float]) -> dict[str, Image.Image]:
    """Two pictures TensorBoard might log: a rendered 640 x 480 learning-curve figure (flat areas)
    and a noisy, photo-like 256 x 256 image."""
    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
    ax.plot(list(curve), list(curve.values()), "o-")
    ax.set_title("training loss")
    fig.canvas.draw()
    figure = Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())
    plt.close(fig)
    g = torch.Generator().manual_seed(0)
    yy, xx = torch.meshgrid(torch.linspace(0, 1, 256), torch.linspace(0, 1, 256), indexing="ij")
    smooth = torch.stack([torch.sin(6 * xx) * 0.5 + 0.5, yy, xx * yy], dim=-1)
    noisy = (smooth + 0.03 * torch.randn(256, 256, 3, generator=g)).clamp(0, 1)
    return {"figure 640x480": figure, "photo-like 256x256": Image.fromarray((noisy * 255).to(torch.uint8).numpy())}


def png_sizes(images: dict[str, Image.Image], levels: dict[str, dict],
              encode: Callable[..., bytes]) -> list[dict[str, str]]:
    """Rows for a table: each image's raw RGB bytes, then its bytes as ``encode(image, **options)``
    writes it at each setting."""
    rows = [{"encoding": "raw RGB", **{name: f"{len(im.tobytes()):,}" for name, im in images.items()}}]
    for label, options in levels.items():
        rows.append({"encoding": label, **{name: f"{len(encode(im, **options)):,}" for name, im in images.items()}})
    return rows


def tensorboard_png_line() -> dict[str, str]:
    """Where this torch encodes TensorBoard images (the ``format="PNG"`` line of
    ``torch/utils/tensorboard/summary.py``), and whether the tensorboard package is installed."""
    summary = Path(importlib.util.find_spec("torch").origin).parent / "utils" / "tensorboard" / "summary.py"
    lines = [f"line {n}: {line.strip()}" for n, line in enumerate(summary.read_text().splitlines(), 1)
             if 'format="PNG"' in line]
    return {"torch/utils/tensorboard/summary.py": "; ".join(lines) or "(not found)",
            "tensorboard installed here": importlib.util.find_spec("tensorboard") is not None}
