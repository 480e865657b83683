"""Setup for notebook 03 (building models): the small models its demos share, and the tables that
show what a module tree registered, initialized, moved, switched or changed. The lessons are in
the notebook; this is the scaffolding around them.
"""
from __future__ import annotations

import copy
import io
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .tables import Table, attempt


# ---------------------------------------------------------------- models the demos share

class ExplicitMLP(nn.Module):
    """A 2 -> 16 -> 16 -> 3 MLP written out: every layer named in __init__ and again in forward()."""

    def __init__(self, d_in: int = 2, d_hidden: int = 16, d_out: int = 3):
        super().__init__()
        self.input_layer = nn.Linear(d_in, d_hidden)
        self.input_activation = nn.ReLU()
        self.mid_layer = nn.Linear(d_hidden, d_hidden)
        self.mid_activation = nn.ReLU()
        self.output_layer = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        x = self.input_activation(self.input_layer(x))
        x = self.mid_activation(self.mid_layer(x))
        return self.output_layer(x)


class TiedLM(nn.Module):
    """An embedding and an output layer that share one weight matrix (tied weights)."""

    def __init__(self, vocab: int = 1000, dim: int = 64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, vocab, bias=False)
        self.out.weight = self.embed.weight      # one Parameter, two names


def conv_block(c_in: int, c_out: int) -> nn.Sequential:
    """Conv 3x3 (no bias, T044) -> BatchNorm -> ReLU."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


class SmallCNN(nn.Module):
    """Two conv blocks, global average pooling and a linear classifier, for 3-channel images."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(conv_block(3, 16), nn.MaxPool2d(2), conv_block(16, 32))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.classifier(self.pool(self.features(x)).flatten(1))


def training_step(model: nn.Module, inputs: torch.Tensor) -> Callable[[], None]:
    """A forward + backward step of ``model`` on ``inputs`` (in train mode); the gradients are returned
    by ``torch.autograd.grad``, not accumulated in ``.grad``."""
    params = list(model.train().parameters())

    def step():
        torch.autograd.grad(model(inputs).sum(), params)
    return step


def keys_report(result) -> str:
    """What ``load_state_dict(..., strict=False)`` returned, in one line: how many keys were missing
    and how many unexpected."""
    return f"{len(result.missing_keys)} missing, {len(result.unexpected_keys)} unexpected"


def saved(obj) -> io.BytesIO:
    """``torch.save(obj)`` into memory, rewound: a checkpoint file without a file."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


# ---------------------------------------------------------------- what the tree sees

def linear_layers(model: nn.Module) -> list[nn.Linear]:
    """The Linear layers a ``BadListModel``-style model uses in forward(), registered or not."""
    return [m for m in [model.input_layer, *model.mid_layers, model.output_layer] if isinstance(m, nn.Linear)]


def registry_row(model: nn.Module) -> dict:
    """What the module tree of a model with ``input_layer``, ``mid_layers`` and ``output_layer`` sees,
    against what its forward() uses."""
    used = linear_layers(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return {"model": type(model).__name__, "tensors forward() uses": sum(len(list(m.parameters())) for m in used),
            "parameters()": len(list(model.parameters())), "state_dict()": len(model.state_dict()),
            "optimizer": sum(len(g["params"]) for g in optimizer.param_groups)}


def moved_forward(model_cls: type, **to_kwargs) -> str:
    """Build a fresh model, move it with ``.to(**to_kwargs)``, run a forward pass on a matching input."""
    model = model_cls().to(**to_kwargs)

    def forward() -> str:
        out = model(torch.ones(4, 2, **to_kwargs))
        return f"ok: {out.dtype}, on {out.device}"
    return attempt(forward, limit=60)


def init_table(model: nn.Module, folded: bool = False) -> Table:
    """For each Conv2d, Linear and BatchNorm2d: the initialization expected from the loop in the
    notebook, and the statistics measured on the weights."""
    rows = []
    for name, m in model.named_modules():
        if isinstance(m, nn.Conv2d):
            fan_out = m.out_channels * m.kernel_size[0] * m.kernel_size[1]
            rows.append({"layer": name, "init": "kaiming_normal_, fan_out", "expected std": f"{(2 / fan_out) ** 0.5:.4f}",
                         "measured": f"std {m.weight.std().item():.4f}"})
        elif isinstance(m, nn.Linear):
            rows.append({"layer": name, "init": "xavier_normal_",
                         "expected std": f"{(2 / (m.in_features + m.out_features)) ** 0.5:.4f}",
                         "measured": f"std {m.weight.std().item():.4f}"})
        elif isinstance(m, nn.BatchNorm2d):
            rows.append({"layer": name, "init": "weight 1, bias 0", "expected std": "-",
                         "measured": f"weight 1: {bool((m.weight == 1).all())}, bias 0: {bool((m.bias == 0).all())}"})
    return Table(rows, caption=f"Initialization through modules(): {len(rows)} layers", folded=folded)


def tensor_table(module: nn.Module, names: list[str], caption: str = "") -> Table:
    """Where each named tensor attribute of ``module`` goes: state_dict(), and its dtype after
    ``.to(torch.float64)`` (applied to a copy of the module)."""
    state = module.state_dict()
    moved = copy.deepcopy(module).to(torch.float64)
    return Table([{"tensor": name, "in state_dict()": name in state,
                   "after .to(float64)": str(getattr(moved, name).dtype).removeprefix("torch.")} for name in names],
                 caption=caption)


def eval_table(classes: list[type], x: torch.Tensor, folded: bool = False) -> Table:
    """Each model class, seeded and in eval mode: do two calls agree, and what share is zeroed (the
    caption gives the shares)."""
    rows = []
    for cls in classes:
        torch.manual_seed(0)
        m = cls().eval()
        a, b = m(x), m(x)
        rows.append({"model, in eval()": cls.__name__, "two calls agree": torch.equal(a, b),
                     "outputs zeroed": f"{(a == 0).float().mean().item():.0%}"})
    zeroed = ", ".join(f"{row['model, in eval()']} {row['outputs zeroed']}" for row in rows)
    return Table(rows, caption=f"Outputs zeroed after model.eval(): {zeroed}", folded=folded)


def _first_output(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out = module(x)
    return out[0] if isinstance(out, tuple) else out


def _state_changes(module: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, bool]:
    before = {k: v.clone() for k, v in module.state_dict().items()}
    first, second = _first_output(module, x), _first_output(module, x)
    return first, second, any(not torch.equal(before[k], v) for k, v in module.state_dict().items())


def train_eval_table(folded: bool = False) -> Table:
    """Dropout, BatchNorm, a 2-layer LSTM with dropout and a Transformer layer, called twice on the
    same input in train() and in eval() mode."""
    torch.manual_seed(0)
    probes = {
        "Dropout(0.5)": (nn.Dropout(0.5), torch.randn(16, 32)),
        "BatchNorm1d(32)": (nn.BatchNorm1d(32), torch.randn(16, 32) * 3 + 1),
        "LSTM(2 layers, dropout=0.5)": (nn.LSTM(32, 32, num_layers=2, dropout=0.5, batch_first=True),
                                        torch.randn(4, 10, 32)),
        "TransformerEncoderLayer (dropout 0.1)": (nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True),
                                                  torch.randn(4, 10, 32)),
    }
    rows = []
    for name, (module, x) in probes.items():
        t1, t2, moved_train = _state_changes(module.train(), x)
        e1, e2, moved_eval = _state_changes(module.eval(), x)
        rows.append({"module": name, "train: calls agree": torch.equal(t1, t2), "eval: calls agree": torch.equal(e1, e2),
                     "train output == eval output": torch.allclose(t1, e1),
                     "state changed in train / eval": f"{moved_train} / {moved_eval}"})
    return Table(rows, caption="train() vs eval(), module by module", folded=folded)


def conv_size_table(formula: Callable[..., int], folded: bool = False) -> Table:
    """``formula(h, k, s, p, d)`` against real Conv2d/MaxPool2d layers for everyday configurations; the
    caption counts the matches."""
    configs = [  # (label, layer, H in, (kernel, stride, padding, dilation))
        ("3x3, s1, p1 (keeps the size)", nn.Conv2d(1, 1, 3, 1, 1), 32, (3, 1, 1, 1)),
        ("1x1, s1, p0 (keeps the size)", nn.Conv2d(1, 1, 1), 32, (1, 1, 0, 1)),
        ("3x3, s2, p1", nn.Conv2d(1, 1, 3, 2, 1), 32, (3, 2, 1, 1)),
        ("3x3, s2, p1, odd input", nn.Conv2d(1, 1, 3, 2, 1), 33, (3, 2, 1, 1)),
        ("7x7, s2, p3 (ResNet stem)", nn.Conv2d(1, 1, 7, 2, 3), 224, (7, 2, 3, 1)),
        ("3x3, dilation 2, p2", nn.Conv2d(1, 1, 3, 1, 2, dilation=2), 32, (3, 1, 2, 2)),
        ("5x5, s3, p0", nn.Conv2d(1, 1, 5, 3), 32, (5, 3, 0, 1)),
        ("2x2, s2 (no overlap)", nn.Conv2d(1, 1, 2, 2), 31, (2, 2, 0, 1)),
        ("MaxPool2d 3, s2, p1", nn.MaxPool2d(3, 2, 1), 112, (3, 2, 1, 1)),
        ("5x5, dilation 3, padding='same'", nn.Conv2d(1, 1, 5, padding="same", dilation=3), 30, (5, 1, 6, 3)),
    ]
    rows = []
    for label, layer, h, (k, s, p, d) in configs:
        actual = layer(torch.zeros(1, 1, h, h)).shape[-1]
        rows.append({"configuration": label, "H in": h, "formula": formula(h, k, s, p, d), "real layer": actual,
                     "match": formula(h, k, s, p, d) == actual})
    matching = sum(row["match"] for row in rows)
    return Table(rows, caption=f"The formula against real layers: {matching} of {len(rows)} match", folded=folded)


def gap_table(sizes: list[tuple[int, int]]) -> Table:
    """SmallCNN (global average pooling) against the same trunk with a Flatten + Linear head built for
    32 x 32 inputs, on inputs of other sizes."""
    torch.manual_seed(0)
    gap_net = SmallCNN().eval()
    flat_net = nn.Sequential(conv_block(3, 16), nn.MaxPool2d(2), conv_block(16, 32), nn.Flatten(),
                             nn.Linear(32 * 16 * 16, 10)).eval()
    rows = []
    with torch.inference_mode():
        for size in sizes:
            x = torch.randn(1, 3, *size)
            rows.append({"input H x W": f"{size[0]} x {size[1]}", "GAP head": attempt(lambda: tuple(gap_net(x).shape)),
                         "Flatten head": attempt(lambda: tuple(flat_net(x).shape), brief=True)})
    return Table(rows, caption="Heads on other sizes (Flatten built for 32 x 32)")


def step_changes(model: nn.Module, optimizer: torch.optim.Optimizer, images: torch.Tensor,
                 labels: torch.Tensor, head: str = "fc.") -> dict:
    """One optimizer step of cross-entropy; how many head parameters, backbone parameters and
    buffers (BatchNorm statistics) it changed."""
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    optimizer.zero_grad(set_to_none=True)
    F.cross_entropy(model(images), labels).backward()
    optimizer.step()
    after = model.state_dict()
    params = {name for name, _ in model.named_parameters()}
    changed = {k for k in before if not torch.equal(before[k], after[k])}

    def share(keys):
        keys = list(keys)
        return f"{sum(k in changed for k in keys)} / {len(keys)}"
    return {"head tensors changed": share(k for k in params if k.startswith(head)),
            "backbone": share(k for k in params if not k.startswith(head)),
            "BatchNorm buffers": share(k for k in before if k not in params)}


def group_step_table(optimizer: torch.optim.SGD, loss_fn: Callable[[], torch.Tensor], names: list[str],
                     folded: bool = False) -> Table:
    """One plain-SGD step; for each parameter group, |update| / |grad| per tensor (median), which
    recovers the learning rate the group really used."""
    before = [[p.detach().clone() for p in g["params"]] for g in optimizer.param_groups]
    optimizer.zero_grad(set_to_none=True)
    loss_fn().backward()
    optimizer.step()
    rows = []
    for name, group, old in zip(names, optimizer.param_groups, before):
        ratio = torch.stack([(o - p.detach()).norm() / p.grad.norm()
                             for o, p in zip(old, group["params"]) if p.grad is not None and p.grad.norm() > 0])
        rows.append({"group": name, "tensors": len(group["params"]),
                     "parameters": sum(p.numel() for p in group["params"]), "lr set": group["lr"],
                     "measured |update| / |grad|": f"{ratio.median().item():.2e}"})
    return Table(rows, caption="Per-group learning rates, checked", folded=folded)
