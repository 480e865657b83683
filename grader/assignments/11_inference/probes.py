"""Probes for 11_inference (run in the sandbox after grader/probe_helpers.py).

Everything the probes observe with is bound while this file loads, before any student code runs:
the inference-mode, grad-mode and RNG readers, ``nn.Module.train``, the tensor methods that copy
results out, and the real ``torch.export.save`` / ``torch.export.load``. In the sandbox (where the
runner loads this file as ``probes``) ``torch.export.save`` is also replaced by a pass-through that
writes a program saved into the round-trip probe's own folder with marked weights (every floating
entry of its state dict plus ``MARK``): a program read back from that file computes with the marked
weights, the program still in memory with the model's, so the answers tell which one the answer
returned. Saves anywhere else (the answer cells' own, for one) are left exactly as they were.
"""
import os
import tempfile

import torch
from torch import nn

# Bound while the probes load, before any student code runs.
_inference_mode_enabled = torch.is_inference_mode_enabled
_grad_enabled = torch.is_grad_enabled
_rng_state = torch.default_generator.get_state
_manual_seed = torch.manual_seed
_equal = torch.equal
_add = torch.add
_export_save = torch.export.save
_export_load = torch.export.load
_export_code = torch.export.export.__code__
_ExportedProgram = torch.export.ExportedProgram
_GraphModule = torch.fx.GraphModule
_Exported = getattr(getattr(torch.export, "_unlift", None), "_StatefulGraphModule", torch.fx.GraphModule)
_OpOverload = torch._ops.OpOverload
_state_dict_of = torch.export.ExportedProgram.state_dict.fget
_Parameter = nn.Parameter
_train = nn.Module.train
_module_to = nn.Module.to
_no_grad = torch.no_grad
_inference_mode = torch.inference_mode
_module_state = nn.Module.state_dict
_getattribute = object.__getattribute__
_Tensor = torch.Tensor
_detach, _clone, _contiguous = torch.Tensor.detach, torch.Tensor.clone, torch.Tensor.contiguous
_isfile = os.path.isfile
_device = torch.device
_DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}

# batched_predict: (requests, max_batch, mode the model comes in, dtype, default device while it runs).
BATCHED_CASES = [
    (10, 4, True, "float32", None), (6, 3, False, "float32", None), (3, 8, True, "float32", None),
    (5, 1, False, "float32", None), (0, 5, True, "float32", None), (9, 9, False, "float32", None),
    (7, 2, False, "bfloat16", None), (5, 3, True, "float64", None), (6, 4, True, "float32", "meta"),
]
# The model raises on its second call (batch index 1): (requests, max_batch, mode it comes in, what it
# raises: an Exception, or a BaseException that is not one, as KeyboardInterrupt and SystemExit are).
RAISING_CASES = [(10, 3, True, "error"), (7, 2, False, "error"), (6, 2, True, "interrupt")]
# Called from another autograd state: (requests, max_batch, mode it comes in, the caller's context).
CALLER_CASES = [(5, 2, True, "no_grad"), (7, 3, False, "inference_mode")]
MARK = 0.5  # added to every floating weight of a program saved while the round-trip probe runs
EXPORT_BATCHES = (1, 3, 8, 17, 1500)


def _plain(value):
    """A CPU copy of an exact torch.Tensor (methods bound before student code), else a marker."""
    if type(value) not in (_Tensor, _Parameter):
        return f"<not a tensor: {type(value).__name__}>"
    if _getattribute(value, "device").type != "cpu":
        return f"<a tensor on {_getattribute(value, 'device')}>"
    return _contiguous(_clone(_detach(value)))


def _modules(model):
    """Every module in ``model``'s tree, read without any method the answer could replace."""
    found, stack = [], [model]
    while stack:
        module = stack.pop()
        found.append(module)
        stack.extend(m for m in reversed(list(_getattribute(module, "_modules").values())) if m is not None)
    return found


def _modes(model):
    return [bool(_getattribute(m, "training")) for m in _modules(model)]


def _state(model):
    """Every parameter and buffer: values, dtypes, requires_grad (to tell whether they changed)."""
    return {name: (_clone(_detach(t)), t.requires_grad) for name, t in _module_state(model, keep_vars=True).items()}


def _same_state(before, after):
    return (list(before) == list(after)
            and all(b[0].dtype == a[0].dtype and b[0].shape == a[0].shape and _equal(b[0], a[0]) and b[1] == a[1]
                    for b, a in zip(before.values(), after.values())))


def _autograd():
    return {"inference": bool(_inference_mode_enabled()), "grad": bool(_grad_enabled())}


# ---- batched_predict -------------------------------------------------------------------------

def _scorer(state):
    """The model the batched_predict checks use: BatchNorm and Dropout, so eval mode matters."""
    model = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    model.load_state_dict(state)
    return model


class _ServingError(RuntimeError):
    pass


class _ServingStopped(BaseException):
    """Not an Exception: what Ctrl-C (KeyboardInterrupt) or SystemExit look like to an except clause."""


def _watched(inner, fail_at=None, error=_ServingError):
    """The model wrapped so that every call is logged: the batch it got, every layer's mode, the
    autograd state; with ``fail_at``, the call of that index raises instead of answering."""
    log, raised = [], []

    class Watched(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            entry = {"type": type(x).__name__, "modes": _modes(self), **_autograd()}
            if type(x) is _Tensor:
                entry["shape"] = [int(s) for s in _getattribute(x, "shape")]
                entry["rows"] = _plain(x) if len(log) < 64 else None
            log.append(entry)
            if fail_at is not None and len(log) == fail_at + 1:
                raised.append(error(f"the model failed on its call {fail_at + 1} (raised by the grader)"))
                raise raised[-1]
            return self.inner(x)

    return Watched(), log, raised


def batched_predict(namespace, inputs):
    fn = lookup(namespace, "batched_predict")

    def case(spec, n, max_batch, training, dtype, default):
        model, log, _ = _watched(_module_to(_scorer(inputs["state"]), _DTYPES[dtype]))
        _train(model, training)
        requests = [_clone(row) for row in spec["requests"]]
        before, modes_before, autograd_before = _state(model), _modes(model), _autograd()
        _manual_seed(spec["seed"])
        rng = _rng_state()
        if default is None:
            result = fn(model, requests, max_batch)
        else:
            with _device(default):
                result = fn(model, requests, max_batch)
        rng_same = _equal(rng, _rng_state())
        if type(result) in (list, tuple):
            outputs = [_plain(out) for out in result]
            details = [{"dtype": str(out.dtype), "device": str(out.device)} if type(out) is _Tensor else None
                       for out in result[:64]]
        else:
            outputs, details = f"<not a list: {type(result).__name__}>", None
        return {"kind": type(result).__name__, "outputs": outputs, "details": details, "calls": log[:64],
                "modes_before": modes_before, "modes_after": _modes(model), "autograd_before": autograd_before,
                "autograd_after": _autograd(), "rng_same": bool(rng_same),
                "state_same": _same_state(before, _state(model))}

    def raising(n, max_batch, training, kind):
        error = _ServingStopped if kind == "interrupt" else _ServingError
        model, log, raised = _watched(_scorer(inputs["state"]), fail_at=1, error=error)
        _train(model, training)
        requests = [_clone(row) for row in inputs["requests"][:n]]
        modes_before, autograd_before = _modes(model), _autograd()
        try:
            fn(model, requests, max_batch)
            caught = None
        except BaseException as exc:  # the answer's code may raise anything
            caught = exc
        return {"raised": None if caught is None else f"{type(caught).__name__}: {caught}"[:300],
                "propagated": bool(raised) and caught is raised[0], "calls": log[:64],
                "modes_before": modes_before, "modes_after": _modes(model), "autograd_before": autograd_before,
                "autograd_after": _autograd()}

    def caller(n, max_batch, training, context):
        """The call made under the caller's no_grad() or inference_mode(): the state read inside that block."""
        model, log, _ = _watched(_scorer(inputs["state"]))
        _train(model, training)
        requests = [_clone(row) for row in inputs["requests"][:n]]
        with (_no_grad() if context == "no_grad" else _inference_mode()):
            modes_before, autograd_before = _modes(model), _autograd()
            fn(model, requests, max_batch)
            autograd_after = _autograd()
        return {"calls": log[:64], "modes_before": modes_before, "modes_after": _modes(model),
                "autograd_before": autograd_before, "autograd_after": autograd_after}

    return {"cases": [attempt(case, spec, *key) for spec, key in zip(inputs["cases"], BATCHED_CASES)],
            "raising": [attempt(raising, *key) for key in RAISING_CASES],
            "caller": [attempt(caller, *key) for key in CALLER_CASES]}


# ---- export_and_reload -----------------------------------------------------------------------

MARKED_FOLDER = "grader-marked-"  # the round-trip probe's folder: only saves into it are marked


def _save(ep, f, *args, **kwargs):
    """torch.export.save, unchanged, except for a program saved into the round-trip probe's folder
    (MARKED_FOLDER): that one is written with every floating weight plus MARK (the program object
    itself is left as it was)."""
    target = f if isinstance(f, (str, os.PathLike)) else getattr(f, "name", None)
    folder = os.path.basename(os.path.dirname(os.fspath(target))) if isinstance(target, (str, os.PathLike)) else ""
    if not folder.startswith(MARKED_FOLDER) or type(ep) is not _ExportedProgram:
        return _export_save(ep, f, *args, **kwargs)
    state = _state_dict_of(ep)
    original = dict(state)
    try:
        for name, t in original.items():
            if type(t) in (_Tensor, _Parameter) and t.is_floating_point():
                marked = _add(_detach(t), MARK)
                state[name] = _Parameter(marked, requires_grad=t.requires_grad) if type(t) is _Parameter else marked
        return _export_save(ep, f, *args, **kwargs)
    finally:
        state.clear()
        state.update(original)


if __name__ == "probes":  # the sandbox's runner; the trusted side only reads these definitions
    # Rebuilt on globals of its own: what student code can reach from torch.export.save is this
    # function's few names, not the probes' namespace (the spies above).
    _save = type(_save)(_save.__code__, {
        "__builtins__": __builtins__, "os": os, "getattr": getattr, "isinstance": isinstance, "type": type,
        "dict": dict, "MARK": MARK, "MARKED_FOLDER": MARKED_FOLDER, "_export_save": _export_save,
        "_ExportedProgram": _ExportedProgram, "_state_dict_of": _state_dict_of, "_Tensor": _Tensor,
        "_Parameter": _Parameter, "_add": _add, "_detach": _detach}, "save")
    _save.__qualname__, _save.__doc__, _save.__module__ = "save", _export_save.__doc__, _export_save.__module__
    torch.export.save = _save


def _export_model(state):
    model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 4))
    model.load_state_dict(state)
    return model


def _plain_mlp(state):
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4))
    model.load_state_dict(state)
    return model


class _Untraceable(nn.Module):
    """A model export cannot capture: its forward raises (each exception kept in raised)."""

    def __init__(self, raised):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 4), nn.Dropout(0.5))
        self.raised = raised

    def forward(self, x):
        self.raised.append(_ServingError("this model cannot be exported (raised by the grader)"))
        raise self.raised[-1]


def _through(exc, code):
    """Whether exc came up through a frame running code (its traceback keeps every frame it passed)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code is not code:
        tb = tb.tb_next
    return tb is not None


def _program(served):
    """Whether the returned callable is a module torch.export made (a graph of ATen operators)."""
    exported = isinstance(served, _Exported) and isinstance(served, _GraphModule)
    ops = []
    if exported:
        graph = _getattribute(served, "_graph")
        ops = sorted({str(node.target) for node in graph.nodes
                      if node.op == "call_function" and isinstance(node.target, _OpOverload)})[:40]
    return {"exported": exported and bool(ops), "type": type(served).__name__, "ops": ops}


def _call(served, x):
    return attempt(lambda: _plain(served(_clone(x))))


def export_and_reload(namespace, inputs):
    fn = lookup(namespace, "export_and_reload")
    folder = tempfile.mkdtemp(prefix="export-")

    def round_trip():
        model = _export_model(inputs["bn_state"])
        _train(model, True)
        path = os.path.join(tempfile.mkdtemp(prefix=MARKED_FOLDER, dir=folder), "served.pt2")
        served = fn(model, _clone(inputs["example"]), path)
        record = {"modes_after": _modes(model), "program": _program(served), "file": None,
                  "first": _call(served, inputs["new"]), "second": _call(served, inputs["new"])}
        with _no_grad():                            # from now on the model computes zeros
            for name, t in _module_state(model, keep_vars=True).items():
                if name.endswith("running_var"):
                    t.fill_(1.0)
                elif t.is_floating_point():
                    t.zero_()
        if _isfile(path):
            from_file = attempt(lambda: _export_load(path).module())
            if isinstance(from_file, dict):
                record["file"] = from_file
            else:  # the returned program and the file's, on the same random numbers (Dropout in training mode)
                _manual_seed(11)
                returned = _call(served, inputs["new"])
                _manual_seed(11)
                record["file"] = {"file": _call(from_file, inputs["new"]), "returned": returned}
        return record

    def raising():
        thrown = []
        model = _Untraceable(thrown)
        _train(model, True)
        try:
            fn(model, _clone(inputs["example"]), os.path.join(folder, "untraceable.pt2"))
            raised, propagated = None, False
        except BaseException as exc:  # the answer's code may raise anything
            raised = f"{type(exc).__name__}: {exc}"[:300]
            # the forward's own exception (non-strict export passes it on), or one torch.export.export raised
            # itself (strict export reports the forward's exception in an error of its own)
            propagated = any(exc is e for e in thrown) or _through(exc, _export_code)
        return {"raised": raised, "propagated": bool(propagated), "modes_after": _modes(model)}

    def dynamic():
        model = _plain_mlp(inputs["mlp_state"])
        _train(model, False)
        fixed = fn(model, _clone(inputs["example"]), os.path.join(folder, "fixed.pt2"))
        fixed_modes = _modes(model)
        flexible = fn(model, _clone(inputs["example"]), os.path.join(folder, "dynamic.pt2"), dynamic_batch=True)
        result = {"fixed_program": _program(fixed), "dynamic_program": _program(flexible),
                  "modes_after": [fixed_modes, _modes(model)],
                  "fixed_same": _call(fixed, inputs["batches"]["8"])}
        try:
            fixed(_clone(inputs["batches"]["3"]))
            result["fixed_other_raised"] = False
        except Exception:
            result["fixed_other_raised"] = True
        result["dynamic"] = {size: _call(flexible, x) for size, x in inputs["batches"].items()}
        # the saved program's own record of the sizes it accepts: a bound no tested batch reaches shows here
        result["upper_bounds"] = attempt(lambda: sorted({str(r.upper) for r in _export_load(
            os.path.join(folder, "dynamic.pt2")).range_constraints.values()}))
        return result

    return {"round_trip": attempt(round_trip), "raising": attempt(raising), "dynamic": attempt(dynamic)}
