"""Probes for 04_training_loop (run in the sandbox; see common.py)."""
import torch
from torch import nn

ARCHITECTURES = {
    "tanh_mlp": lambda: nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)),
    "relu_mlp": lambda: nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)),
    "linear": lambda: nn.Linear(3, 2),
}
LOSSES = {"cross_entropy": nn.CrossEntropyLoss, "mse": nn.MSELoss}


def _run(fn, case):
    model = ARCHITECTURES[case["arch"]]()
    model.load_state_dict(case["state"])
    if case["stale_grads"]:
        for p in model.parameters():
            p.grad = torch.full_like(p, 100.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=case["lr"], momentum=case["momentum"])
    batches = [(x, y) for x, y in case["batches"]]
    losses = fn(model, (b for b in batches) if case["generator"] else batches, optimizer, LOSSES[case["loss"]]())
    return {
        "type": type(losses).__name__,
        "items": [v if type(v) is float else f"<{type(v).__name__}>" for v in losses] if type(losses) is list else [],
        "state": {k: plain(v) for k, v in model.state_dict().items()},
    }


def train_epoch(namespace, inputs):
    fn = lookup(namespace, "train_epoch")
    return {"runs": [attempt(_run, fn, case) for case in inputs["cases"]],
            "empty": attempt(lambda: (lambda r: [type(r).__name__, len(r) if type(r) is list else -1])(
                fn(ARCHITECTURES["linear"](), iter([]), torch.optim.SGD(nn.Linear(3, 2).parameters(), lr=0.1),
                   nn.MSELoss())))}


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.frozen = nn.Linear(6, 6)
        self.frozen.requires_grad_(False)
        self.norm = nn.LayerNorm(6)
        self.scale = nn.Parameter(torch.ones(6))
        self.out = nn.Linear(6, 10, bias=False)
        self.out.weight = self.embed.weight


MODELS = {
    "cnn": lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                                 nn.Linear(4 * 6 * 6, 8), nn.LayerNorm(8), nn.Linear(8, 2)),
    "tied": _Tied,
    "no_vectors": lambda: nn.Linear(5, 3, bias=False),
}


def param_groups_no_decay(namespace, inputs):
    fn = lookup(namespace, "param_groups_no_decay")

    def one(model_name, weight_decay):
        model = MODELS[model_name]()
        names = {}
        for name, p in model.named_parameters(remove_duplicate=False):
            names.setdefault(id(p), name)
        groups = fn(model, weight_decay)
        if type(groups) is not list:
            return {"type": type(groups).__name__}
        out = []
        for group in groups:
            if type(group) is not dict or not isinstance(group.get("params"), (list, tuple)):
                out.append("<not a dict with a params list>")
                continue
            out.append({"weight_decay": float(group.get("weight_decay", float("nan"))),
                        "params": [names.get(id(p), "<unknown tensor>") for p in group["params"]],
                        "keys": sorted(str(k) for k in group)})
        return {"type": "list", "groups": out}

    return [attempt(one, name, wd) for name, wd in inputs["cases"]]
