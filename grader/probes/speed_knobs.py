"""Probes for 07_speed_knobs (run in the sandbox; see common.py)."""
import torch
import torch.nn.functional as F
from torch import nn

# Bound when the probes load, before any student code runs.
_is_autocast_enabled = torch.is_autocast_enabled
_GradScaler = torch.amp.GradScaler
_get_scale = torch.amp.GradScaler.get_scale
_SGD = torch.optim.SGD
_Linear = nn.Linear
_pad = F.pad
_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32, "float64": torch.float64}


class _Net(nn.Module):
    """A small classifier that logs, at every forward call, whether autocast was on and in which dtype its
    first Linear layer computed."""

    def __init__(self, log):
        super().__init__()
        self.hidden = nn.Linear(16, 32)
        self.out = nn.Linear(32, 4)
        self.log = log

    def forward(self, x):
        h = self.hidden(x)
        self.log.append({"autocast": bool(_is_autocast_enabled("cpu")), "hidden": str(h.dtype)})
        return self.out(torch.relu(h))


def _net(state, log):
    net = _Net(log)
    net.load_state_dict(state)
    return net


def _int(value):
    return value if type(value) is int else f"<not an int: {type(value).__name__}>"


def _loss_value(loss):
    return float(loss) if isinstance(loss, float) else f"<not a float: {type(loss).__name__}>"


def amp_train_step(namespace, inputs):
    fn = lookup(namespace, "amp_train_step")

    def run(dtype, x, y, init_scale, stale=None):
        log = []
        net = _net(inputs["state"], log)
        params = list(net.parameters())
        seen = [None] * len(params)
        for i, p in enumerate(params):
            p.register_hook(lambda g, i=i: seen.__setitem__(i, plain(g)))   # the gradient as backward computes it
            if stale is not None:
                p.grad = torch.full_like(p, stale)                           # left over from an earlier step
        optimizer = _SGD(params, lr=inputs["lr"])
        scaler = _GradScaler("cpu", init_scale=init_scale, growth_factor=2.0, backoff_factor=0.5, growth_interval=1)
        loss = fn(net, (x.clone(), y.clone()), optimizer, scaler, "cpu", _DTYPES[dtype])
        return {"log": log[:20], "loss": _loss_value(loss), "params": [plain(p) for p in params],
                "param_dtypes": [str(p.dtype) for p in params], "backward_grads": seen,
                "scale": float(_get_scale(scaler))}

    scale = inputs["init_scale"]
    return {
        "bfloat16": attempt(run, "bfloat16", inputs["x"], inputs["y"], scale),
        "float16": attempt(run, "float16", inputs["x"], inputs["y"], scale),
        "overflow": attempt(run, "bfloat16", inputs["overflow_x"], inputs["overflow_y"], inputs["overflow_scale"]),
        "stale": attempt(run, "bfloat16", inputs["x"], inputs["y"], scale, stale=scale),
    }


def padding(namespace, inputs):
    pad_to_multiple = lookup(namespace, "pad_to_multiple")
    pad_linear = lookup(namespace, "pad_linear")

    def to_multiple(case):
        x = case["x"].clone()
        kwargs = {key: case[key] for key in ("multiple", "dim") if case.get(key) is not None}
        out = pad_to_multiple(x, **kwargs)
        return {"out": plain(out), "input_after": plain(x)}

    def linear(case):
        layer = _Linear(case["in"], case["out"], bias=case["bias"], dtype=_DTYPES[case["dtype"]])
        layer.load_state_dict(case["state"])
        padded = pad_linear(layer, case["multiple"])
        is_linear = isinstance(padded, _Linear)
        n_in = -(-case["in"] // case["multiple"]) * case["multiple"]       # the input width a padded layer takes
        x = _pad(case["x"].to(_DTYPES[case["dtype"]]), (0, n_in - case["in"]))
        with torch.no_grad():
            out = padded(x)
        bias = getattr(padded, "bias", None)
        weight = getattr(padded, "weight", None)
        return {"is_linear": is_linear, "in_features": _int(getattr(padded, "in_features", None)),
                "out_features": _int(getattr(padded, "out_features", None)),
                "weight": plain(weight), "bias": None if bias is None else plain(bias),
                "trainable": type(weight) is nn.Parameter and bool(weight.requires_grad),
                "out": plain(out), "original_weight": plain(layer.weight),
                "original_bias": None if layer.bias is None else plain(layer.bias)}

    return {"to_multiple": [attempt(to_multiple, case) for case in inputs["pad_cases"]],
            "linear": [attempt(linear, case) for case in inputs["linear_cases"]]}
