"""Probes for 03_building_models (run in the sandbox after grader/probe_helpers.py)."""
import torch
from torch import nn


# Bound before any student code runs. What is registered is read from the registry itself (each
# module's _modules and _parameters), not through methods a class can override (named_modules,
# parameters, state_dict), so an answer cannot list layers it never registered.
_vars, _state_dict = vars, nn.Module.state_dict


def _registered(model):
    """The module and every submodule registered under it, each once, in registration order."""
    found, todo = {}, [model]
    while todo:
        module = todo.pop(0)
        if id(module) not in found:
            found[id(module)] = module
            todo[:0] = [m for m in _vars(module)["_modules"].values() if m is not None]
    return list(found.values())


def _parameters(model):
    """The registered parameters, each once."""
    found = {id(p): p for m in _registered(model) for p in _vars(m)["_parameters"].values() if p is not None}
    return list(found.values())


def _linears(model):
    return [{"weight": plain(m.weight), "bias": None if m.bias is None else plain(m.bias)}
            for m in _registered(model) if isinstance(m, nn.Linear)]


def _deep_mlp_once(cls, config, x):
    torch.manual_seed(0)
    model = cls(*config)
    params = _parameters(model)
    record = {
        "param_shapes": [list(p.shape) for p in params],
        "param_objects_unique": len({id(p) for p in params}) == len(params),
        "state_dict": {str(k): plain(v) for k, v in _state_dict(model).items()},
    }
    last = [m for m in _registered(model) if isinstance(m, nn.Linear) and m.out_features == config[2]]
    if len(last) == 1 and last[0].bias is not None:
        with torch.no_grad():  # mostly negative outputs: a ReLU after the last layer would show
            last[0].bias.fill_(-1.0)
    record["linears"] = _linears(model)
    out = model(x)
    record["output"] = plain(out)
    record["grads"] = attempt(lambda: (out.pow(2).sum().backward(), [p.grad is not None for p in params])[1])
    record["output_eval"] = attempt(lambda: plain(model.eval()(x)))
    return record


def _deep_mlp_moved(cls, config, x):
    torch.manual_seed(0)
    model = cls(*config).to(torch.float64)
    record = {"dtypes": [str(p.dtype) for p in _parameters(model)], "linears": _linears(model),
              "output": attempt(lambda: plain(model(x.double())))}
    meta = cls(*config).to("meta")
    record["meta_devices"] = [p.device.type for p in _parameters(meta)]
    # The device half of the forward pass, without computing on "meta" (torch's meta kernels import
    # torch._dynamo, seconds per sandbox): model and input on the CPU under another default device,
    # as with a model on a GPU, so any tensor the forward pass creates without a device shows.
    plain_model = cls(*config)
    record["other_default_output"] = attempt(lambda: _forward_on_meta_default(plain_model, x))
    return record


def _forward_on_meta_default(model, x):
    with torch.device("meta"):
        y = model(x)
    return [y.device.type, list(y.shape)]


def deep_mlp(namespace, inputs):
    cls = lookup(namespace, "DeepMLP", nn.Module)
    results = []
    for config in inputs["configs"]:
        x = inputs["x"][:, : config[0]]
        results.append({"plain": attempt(_deep_mlp_once, cls, config, x),
                        "moved": attempt(_deep_mlp_moved, cls, config, x)})
    return results


def _conv_state(conv):
    return {"weight": plain(conv.weight), "bias": None if conv.bias is None else plain(conv.bias)}


def _fold_once(fold, case):
    conv = nn.Conv2d(**case["hyper"], bias=case["bias"] is not None, dtype=getattr(torch, case["dtype"]))
    with torch.no_grad():
        conv.weight.copy_(case["weight"])
        if conv.bias is not None:
            conv.bias.copy_(case["bias"])
    mean, std = case["mean"].clone(), case["std"].clone()
    new = fold(conv, mean, std)
    record = {"type_is_conv2d": type(new) is nn.Conv2d, "type_name": type(new).__name__}
    if not isinstance(new, nn.Conv2d):
        return record
    mine = list(new.parameters())
    theirs = [p for p in (conv.weight, conv.bias) if p is not None]
    record.update({
        "hyper": {k: list(v) if isinstance(v, tuple) else v for k, v in
                  (("in_channels", new.in_channels), ("out_channels", new.out_channels),
                   ("kernel_size", new.kernel_size), ("stride", new.stride), ("padding", new.padding),
                   ("dilation", new.dilation), ("groups", new.groups), ("padding_mode", new.padding_mode))},
        "weight": plain(new.weight), "bias": None if new.bias is None else plain(new.bias),
        "param_names": sorted(n for n, _ in new.named_parameters()),
        "dtypes": [str(p.dtype).removeprefix("torch.") for _, p in sorted(new.named_parameters())],
        "params_are_parameters": all(type(p) is nn.Parameter for p in mine),
        "shares_objects": new is conv or any(p is q or p.untyped_storage().data_ptr() == q.untyped_storage().data_ptr()
                                             for p in mine for q in theirs),
        "output": attempt(lambda: plain(new(case["x"].to(new.weight.dtype)))),
        "input_after_call": _conv_state(conv),
        "mean_after": plain(mean), "std_after": plain(std),
    })
    with torch.no_grad():
        for p in mine:
            p.add_(1.0)
    record["input_after_edit"] = _conv_state(conv)
    return record


def _fold_zero_padded(fold, case):
    conv = nn.Conv2d(**case["hyper"], bias=case["has_bias"])
    try:
        new = fold(conv, case["mean"].clone(), case["std"].clone())
    except BaseException as exc:  # the student's code may raise anything; the check wants ValueError
        return {"raised": [c.__name__ for c in type(exc).__mro__], "message": str(exc)[:300]}
    return {"returned": type(new).__name__}


def _fold_on_meta(fold, case):
    """conv, mean and std on the meta device (no data; it stands in for a GPU): where the result's parameters live."""
    conv = nn.Conv2d(**case["hyper"], bias=case["bias"] is not None, dtype=getattr(torch, case["dtype"]), device="meta")
    new = fold(conv, case["mean"].to("meta"), case["std"].to("meta"))
    return [str(p.device) for _, p in sorted(new.named_parameters())] if isinstance(new, nn.Module) else None


def fold_normalize(namespace, inputs):
    fold = lookup(namespace, "fold_normalize")
    return {"cases": [attempt(_fold_once, fold, case) for case in inputs["cases"]],
            "zero_padded": [attempt(_fold_zero_padded, fold, case) for case in inputs["zero_padded"]],
            "meta": [attempt(_fold_on_meta, fold, inputs["cases"][i]) for i in inputs["meta"]]}
