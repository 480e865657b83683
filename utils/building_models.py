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


def conv_bn_stack(channels: int, blocks: int, bias: bool) -> nn.Sequential:
    """``blocks`` times Conv2d(channels, channels, 3) -> BatchNorm2d -> ReLU, the conv with or without bias."""
    layers = []
    for _ in range(blocks):
        layers += [nn.Conv2d(channels, channels, 3, padding=1, bias=bias), nn.BatchNorm2d(channels), nn.ReLU()]
    return nn.Sequential(*layers)


def training_step(model: nn.Module, inputs: torch.Tensor) -> Callable[[], None]:
    """A forward + backward step of ``model`` on ``inputs`` (in train mode); the gradients are returned
    by ``torch.autograd.grad``, not accumulated in ``.grad``."""
    params = list(model.train().parameters())

    def step():
        torch.autograd.grad(model(inputs).sum(), params)
    return step


def load_report(model: nn.Module, state: dict) -> str:
    """``model.load_state_dict(state, strict=False)`` in one line: what it returned (key lists of more
    than four names as counts), or the first reason it raised."""
    try:
        result = model.load_state_dict(state, strict=False)
    except RuntimeError as err:
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        return f"RuntimeError: {lines[1] if len(lines) > 1 else lines[0]}"  # one line, both shapes: the point

    def listed(keys):
        return keys if len(keys) <= 4 else f"{len(keys)} keys, e.g. {keys[:2]}"
    return f"missing: {listed(result.missing_keys)}; unexpected: {listed(result.unexpected_keys)}"


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
    return {"model": type(model).__name__, "Linear layers in forward()": len(used),
            "tensors forward() needs": sum(len(list(m.parameters())) for m in used),
            "model.parameters()": len(list(model.parameters())), "state_dict() entries": len(model.state_dict()),
            "tensors in the optimizer": sum(len(g["params"]) for g in optimizer.param_groups)}


def moved_forward(model_cls: type, **to_kwargs) -> str:
    """Build a fresh model, move it with ``.to(**to_kwargs)``, run a forward pass on a matching input."""
    model = model_cls().to(**to_kwargs)

    def forward() -> str:
        out = model(torch.ones(4, 2, **to_kwargs))
        return f"ok: {out.dtype}, on {out.device}"
    return attempt(forward)


def init_table(model: nn.Module) -> Table:
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
    return Table(rows, caption="Initialization applied through modules()")


def tensor_table(module: nn.Module, names: list[str], caption: str = "") -> Table:
    """Where each named tensor attribute of ``module`` goes: parameters(), state_dict(), and its
    dtype after ``.to(torch.float64)`` (applied to a copy of the module)."""
    params = {id(p) for p in module.parameters()}
    state = module.state_dict()
    moved = copy.deepcopy(module).to(torch.float64)
    return Table([{"tensor": name, "in parameters()": id(getattr(module, name)) in params, "in state_dict()": name in state,
                   "dtype after .to(torch.float64)": getattr(moved, name).dtype} for name in names], caption=caption)


def eval_table(classes: list[type], x: torch.Tensor) -> Table:
    """Each model class, seeded and in eval mode: do two calls agree, and what share is zeroed."""
    rows = []
    for cls in classes:
        torch.manual_seed(0)
        m = cls().eval()
        a, b = m(x), m(x)
        rows.append({"model, in eval()": cls.__name__, "two calls agree": torch.equal(a, b),
                     "outputs zeroed": f"{(a == 0).float().mean().item():.0%}"})
    return Table(rows, caption="Dropout after model.eval() (ReLU alone zeroes about half the outputs)")


def _first_output(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out = module(x)
    return out[0] if isinstance(out, tuple) else out


def _state_changes(module: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, bool]:
    before = {k: v.clone() for k, v in module.state_dict().items()}
    first, second = _first_output(module, x), _first_output(module, x)
    return first, second, any(not torch.equal(before[k], v) for k, v in module.state_dict().items())


def train_eval_table() -> Table:
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
    return Table(rows, caption="The same input, twice in train() and twice in eval()")


def conv_size_table(formula: Callable[..., int]) -> Table:
    """``formula(h, k, s, p, d)`` against real Conv2d/MaxPool2d layers for everyday configurations."""
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
    return Table(rows, caption="floor((H + 2p - d(k - 1) - 1) / s) + 1 against real layers")


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
            rows.append({"input H x W": f"{size[0]} x {size[1]}", "feature map": tuple(gap_net.features(x).shape[1:]),
                         "GAP head": attempt(lambda: gap_net(x)), "Flatten + Linear head": attempt(lambda: flat_net(x))})
    return Table(rows, caption="A GAP head takes any input size; a Flatten head only the size it was built for (32 x 32)")


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
        return f"{sum(k in changed for k in keys)} of {len(keys)}"
    return {"head parameters changed": share(k for k in params if k.startswith(head)),
            "backbone parameters changed": share(k for k in params if not k.startswith(head)),
            "BatchNorm buffers changed": share(k for k in before if k not in params)}


def group_step_table(optimizer: torch.optim.SGD, loss_fn: Callable[[], torch.Tensor], names: list[str]) -> Table:
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
    return Table(rows, caption="Per-group learning rates, checked on one SGD step")
