"""Probes for 07_speed_knobs (run in the sandbox after grader/probe_helpers.py)."""
import inspect

import torch
import torch.nn.functional as F
from torch import nn

# Bound when the probes load, before any student code runs.
_is_autocast_enabled = torch.is_autocast_enabled
_GradScaler = torch.amp.GradScaler
_get_scale = torch.amp.GradScaler.get_scale
_SGD = torch.optim.SGD
_Linear = nn.Linear
_Parameter = nn.Parameter
_pad = F.pad
_no_grad = torch.no_grad
_device = torch.device
_grad = torch.autograd.grad
_signature, _empty, _dtype = inspect.signature, inspect.Parameter.empty, torch.dtype
_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32, "float64": torch.float64,
           "int64": torch.int64}


def _watch(*places):
    """(shown name, owner, attribute, the object as it was before any student code ran)."""
    return [(f"{label}.{attr}", owner, attr, getattr(owner, attr)) for label, owner, attrs in places for attr in attrs]


# What the notebook's tests compare with, and what each exercise's mechanism runs on. An answer that replaces
# any of these (to make a test hear what it wants) is caught however it reached them. (Not optimizers' step:
# torch itself wraps an optimizer class's step when its first instance is made.)
_COMPARE = (("torch", torch, ("equal", "allclose", "isclose")), ("torch.testing", torch.testing, ("assert_close",)),
            ("torch.Tensor", torch.Tensor, ("__eq__", "all", "tolist", "item")))
_WATCHED = {
    "amp_train_step": _watch(
        *_COMPARE,
        ("torch", torch, ("is_autocast_enabled", "get_autocast_dtype", "autocast", "set_autocast_enabled")),
        ("torch.amp", torch.amp, ("autocast", "GradScaler")),
        ("torch.amp.GradScaler", torch.amp.GradScaler, ("scale", "unscale_", "step", "update", "get_scale")),
        ("torch.nn.utils", nn.utils, ("clip_grad_norm_",)),
        ("torch.nn.utils.clip_grad", nn.utils.clip_grad, ("clip_grad_norm_",)),
        ("torch.Tensor", torch.Tensor, ("backward", "register_hook")),
        ("torch.autograd", torch.autograd, ("backward", "grad")),
        ("torch.nn.functional", F, ("cross_entropy", "linear")),
        ("torch.nn.Linear", nn.Linear, ("forward",))),
    "padding": _watch(
        *_COMPARE,
        ("torch", torch, ("zeros", "cat")),
        ("torch.nn.functional", F, ("pad", "linear")),
        ("torch.nn", nn, ("Linear", "Parameter")),
        ("torch.nn.Linear", nn.Linear, ("forward",))),
}


def _replaced(exercise):
    """The watched names the answer's code replaced (so far)."""
    return [name for name, owner, attr, original in _WATCHED[exercise] if getattr(owner, attr, None) is not original]


class _Net(nn.Module):
    """A small classifier that logs, at every forward call, whether autocast was on, in which dtype its first
    Linear layer computed, the dtype its weights had, and any torch function replaced by then."""

    def __init__(self, log):
        super().__init__()
        self.hidden = nn.Linear(16, 32)
        self.out = nn.Linear(32, 4)
        self.log = log

    def forward(self, x):
        h = self.hidden(x)
        self.log.append({"autocast": bool(_is_autocast_enabled("cpu")), "hidden": str(h.dtype),
                         "weights": str(self.hidden.weight.dtype), "replaced": _replaced("amp_train_step")})
        return self.out(torch.relu(h))


def _net(state, log):
    net = _Net(log)
    net.load_state_dict(state)
    return net


def _int(value):
    return value if type(value) is int else f"<not an int: {type(value).__name__}>"


def _float(value):
    return float(value) if isinstance(value, float) else f"<not a float: {type(value).__name__}>"


def _returned(result):
    """The (loss, norm) pair the answer returned, as plain floats (or markers saying what came instead)."""
    if isinstance(result, tuple) and len(result) == 2:
        return {"loss": _float(result[0]), "norm": _float(result[1])}
    shown = f"a tuple of {len(result)}" if isinstance(result, tuple) else f"a {type(result).__name__}"
    return {"loss": f"<not a (loss, norm) pair: {shown}>", "norm": f"<not a (loss, norm) pair: {shown}>"}


def _spies(record):
    """An SGD and a GradScaler that behave exactly as theirs do and note how they are called: whether autocast
    was on, whether the optimizer stepped from inside scaler.step, whether update() was handed a scale."""
    inside = [0]

    class Scaler(_GradScaler):
        def step(self, optimizer, *args, **kwargs):
            record["scaler_steps"].append({"autocast": bool(_is_autocast_enabled("cpu"))})
            inside[0] += 1
            try:
                return super().step(optimizer, *args, **kwargs)
            finally:
                inside[0] -= 1

        def update(self, new_scale=None):
            record["updates"].append({"autocast": bool(_is_autocast_enabled("cpu")), "given": new_scale is not None})
            return super().update(new_scale)

    class SGD(_SGD):
        def step(self, closure=None):
            record["optimizer_steps"].append({"autocast": bool(_is_autocast_enabled("cpu")), "via_scaler": inside[0] > 0})
            return super().step(closure)

    return Scaler, SGD


def _defaults(fn, names):
    """How the function's own signature spells each parameter's default (the default device_type, "cuda",
    cannot run on a CPU grader)."""
    params = _signature(fn).parameters
    shown = {}
    for name in names:
        default = params[name].default if name in params else None
        shown[name] = ("<no such parameter>" if name not in params else "<no default>" if default is _empty
                       else str(default) if isinstance(default, _dtype)
                       else repr(default) if type(default) in (str, int, float, bool, type(None))
                       else f"<a {type(default).__name__}>")
    return shown


def amp_train_step(namespace, inputs):
    fn = lookup(namespace, "amp_train_step")

    def run(dtype, x, y, init_scale, max_norm, stale=None):
        log = []
        record = {"scaler_steps": [], "updates": [], "optimizer_steps": [], "backward": []}
        net = _net(inputs["state"], log)
        params = list(net.parameters())
        seen = [None] * len(params)

        def hook(g, i):  # the gradient as backward computes it, and whether autocast was on meanwhile
            seen[i] = plain(g)
            record["backward"].append({"param": i, "autocast": bool(_is_autocast_enabled("cpu"))})

        for i, p in enumerate(params):
            p.register_hook(lambda g, i=i: hook(g, i))
            if stale is not None:
                p.grad = torch.full_like(p, stale)                           # left over from an earlier step
        Scaler, SGD = _spies(record)
        optimizer = SGD(params, lr=inputs["lr"])
        scaler = Scaler("cpu", init_scale=init_scale, growth_factor=2.0, backoff_factor=0.5, growth_interval=1)
        returned = _returned(fn(net, (x.clone(), y.clone()), optimizer, scaler, max_norm, "cpu", _DTYPES[dtype]))
        return {"log": log[:20], **returned, "params": [plain(p) for p in params],
                "param_dtypes": [str(p.dtype) for p in params], "backward_grads": seen,
                "grads_after": [None if p.grad is None else plain(p.grad) for p in params],
                "scale": float(_get_scale(scaler)),
                "record": {k: v[:20] for k, v in record.items()}, "replaced": _replaced("amp_train_step")}

    scale, clip = inputs["init_scale"], inputs["max_norm"]
    return {
        "bfloat16": attempt(run, "bfloat16", inputs["x"], inputs["y"], scale, clip),
        "float16": attempt(run, "float16", inputs["x"], inputs["y"], scale, clip),
        "loose": attempt(run, "bfloat16", inputs["x"], inputs["y"], scale, inputs["loose_max_norm"]),
        "overflow": attempt(run, "bfloat16", inputs["overflow_x"], inputs["overflow_y"], inputs["overflow_scale"],
                            clip),
        "stale": attempt(run, "bfloat16", inputs["x"], inputs["y"], scale, clip, stale=scale),
        "defaults": attempt(_defaults, fn, ("device_type", "dtype")),
    }


def _form(t):
    """Where a tensor lives and what it is, without its values (a tensor on the meta device has none)."""
    if not isinstance(t, torch.Tensor):
        return None
    return {"device": str(t.device), "shape": list(t.shape), "dtype": str(t.dtype)}


def _here(t):
    """plain(t), or a marker for a tensor that is not on the CPU (its data cannot come back)."""
    if isinstance(t, torch.Tensor) and t.device.type != "cpu":
        return f"<a tensor on {t.device}>"
    return plain(t)


class _Moved(Exception):
    """The answer moved a tensor made on the default device to its input's device: right on real devices,
    impossible from the meta device (which holds no data), so the case cannot say more."""


def _call(fn, case, *args):
    """fn(*args), under another default device (meta) when the case asks for it: as with an input on a GPU
    while the default device is the CPU, any tensor made without a device lands elsewhere than the input."""
    if not case.get("default_device"):
        return fn(*args)
    try:
        with _device(case["default_device"]):
            return fn(*args)
    except NotImplementedError as exc:
        if "Cannot copy out of meta tensor" in str(exc):
            raise _Moved() from None
        raise


def padding(namespace, inputs):
    pad_to_multiple = lookup(namespace, "pad_to_multiple")
    pad_linear = lookup(namespace, "pad_linear")

    def to_multiple(case):
        x = case["x"].clone()
        if case.get("grad"):
            x.requires_grad_(True)
        args = [case[key] for key in ("multiple", "dim") if case.get(key) is not None]
        try:
            out = _call(pad_to_multiple, case, x, *args)
        except _Moved:
            return {"moved": True, "replaced": _replaced("padding")}
        rec = {"out": _here(out), "form": _form(out), "input_after": plain(x)}
        if case.get("grad"):
            rec["requires_grad"] = isinstance(out, torch.Tensor) and bool(out.requires_grad)
            if rec["requires_grad"] and tuple(out.shape) == tuple(case["weights"].shape):
                weights = case["weights"].to(out.dtype)
                (g,) = _grad((out * weights).sum(), x, allow_unused=True)
                rec["grad"] = None if g is None else plain(g)
        rec["replaced"] = _replaced("padding")
        return rec

    def linear(case):
        dtype = _DTYPES[case["dtype"]]
        layer = _Linear(case["in"], case["out"], bias=case["bias"], dtype=dtype)
        layer.load_state_dict(case["state"])
        if case.get("frozen"):
            layer.requires_grad_(False)
        originals = {t.untyped_storage().data_ptr() for t in layer.parameters()}
        try:
            padded = _call(pad_linear, case, layer, *[m for m in [case["multiple"]] if m is not None])
        except _Moved:
            return {"moved": True, "replaced": _replaced("padding")}
        is_linear = isinstance(padded, _Linear)
        m = case["multiple"] or 8
        n_in = -(-case["in"] // m) * m                                      # the input width a padded layer takes
        x = _pad(case["x"].to(dtype), (0, n_in - case["in"]))
        weight = getattr(padded, "weight", None)
        out = "<not computed: the layer is not on the CPU>"  # a product on meta costs seconds of imports
        if isinstance(weight, torch.Tensor) and weight.device.type == "cpu":
            try:
                with _no_grad():
                    out = _here(padded(x))
            except Exception as exc:
                out = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        bias = getattr(padded, "bias", None)
        mine = [t for t in padded.parameters()] if isinstance(padded, nn.Module) else []
        return {"is_linear": is_linear, "same_object": padded is layer,
                "shares": padded is not layer and any(isinstance(t, torch.Tensor) and t.device.type != "meta"
                                                      and t.untyped_storage().data_ptr() in originals for t in mine),
                "in_features": _int(getattr(padded, "in_features", None)),
                "out_features": _int(getattr(padded, "out_features", None)),
                "weight": _here(weight), "bias": None if bias is None else _here(bias),
                "forms": [_form(weight), _form(bias)],
                "trainable": type(weight) is _Parameter and bool(weight.requires_grad),
                "bias_trainable": bias is None or (type(bias) is _Parameter and bool(bias.requires_grad)),
                "out": out, "original_weight": plain(layer.weight),
                "original_bias": None if layer.bias is None else plain(layer.bias),
                "replaced": _replaced("padding")}

    return {"to_multiple": [attempt(to_multiple, case) for case in inputs["pad_cases"]],
            "linear": [attempt(linear, case) for case in inputs["linear_cases"]]}
