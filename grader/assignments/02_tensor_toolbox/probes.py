"""Probes for 02_tensor_toolbox (run in the sandbox after grader/probe_helpers.py)."""
import contextlib
import tracemalloc

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map
from torch.utils.weak import WeakIdKeyDictionary

_trace_start, _trace_stop, _traced = tracemalloc.start, tracemalloc.stop, tracemalloc.get_traced_memory
_META, _CPU = torch.device("meta"), torch.device("cpu")
_copy_ops = (torch.ops.aten.copy_.default, torch.ops.aten._to_copy.default)
_to, _empty_strided = torch.Tensor.to, torch.empty_strided


class _Device(TorchDispatchMode):
    """A second device with data, standing in for a GPU: tensors on "meta" (which report that device and
    follow its rules), each computed alongside on a CPU twin that holds its values. As on a GPU, an
    operation mixing it with CPU tensors fails (a 0-dim CPU tensor excepted; copies across are fine),
    while values can be read (``item``, ``.cpu()``, ``nonzero``): the twins answer. So an answer that
    validates its input runs here, and one that makes a tensor on the CPU (``device="cpu"``) shows."""

    def __init__(self):
        super().__init__()
        self.twins = WeakIdKeyDictionary()

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # see _LargestTensor

    def put(self, cpu_tensor):
        """A tensor on this device holding ``cpu_tensor``'s values (call it outside the mode)."""
        on_device = _to(_clone(cpu_tensor), _META)
        self.twins[on_device] = _clone(cpu_tensor)
        return on_device

    def adopt(self, cpu_tensor):
        """``cpu_tensor`` moved onto this device (inside the mode)."""
        on_device = _empty_strided(cpu_tensor.shape, cpu_tensor.stride(), dtype=cpu_tensor.dtype, device=_META)
        self.twins[on_device] = cpu_tensor
        return on_device

    def values(self, t):
        """The values of a tensor on this device (a CPU tensor is returned as it is)."""
        if isinstance(t, torch.Tensor) and t.device == _META:
            if t not in self.twins:
                raise RuntimeError("a tensor on the meta device without data")
            return self.twins[t]
        return t

    def _wrap(self, t):
        if not isinstance(t, torch.Tensor):
            return t
        on_device = _empty_strided(t.shape, t.stride(), dtype=t.dtype, device=_META)
        self.twins[on_device] = t
        return on_device

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        on_device = any(t.device == _META for t in leaves)
        if on_device and func not in _copy_ops and any(t.device != _META and t.dim() > 0 for t in leaves):
            devices = sorted({str(t.device) for t in leaves})
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{' and '.join(devices)} (meta stands in for a GPU)")
        try:
            out = func(*args, **kwargs)
        except (RuntimeError, NotImplementedError) as exc:  # values needed (item, nonzero, unique, a copy out)
            if not on_device or "same device" in str(exc):
                raise
            twin_out = func(*tree_map(self.values, args), **tree_map(self.values, kwargs))
            if kwargs.get("device") is not None and torch.device(kwargs["device"]) != _META:
                return twin_out  # copied off the device: plain CPU data
            return tree_map(self._wrap, twin_out)
        if on_device:  # every operation runs on the twins too (in place ones included)
            twin_out = func(*tree_map(self.values, args), **tree_map(self.values, kwargs))
        elif any(isinstance(t, torch.Tensor) and t.device == _META for t in tree_leaves(out)):
            # made here from nothing (zeros, arange) or from CPU data: its twin is made on the CPU
            twin_out = func(*args, **{k: _CPU if isinstance(v, torch.device) and v == _META else v
                                      for k, v in kwargs.items()})
        else:
            return out
        for mine, twin in zip(tree_leaves(out), tree_leaves(twin_out)):
            if isinstance(mine, torch.Tensor) and mine.device == _META and mine not in self.twins:
                self.twins[mine] = twin
        return out


class _NewData(torch.overrides.TorchFunctionMode):
    """torch.tensor / as_tensor / asarray / Tensor.new_tensor with data from Python onto the stand-in device:
    these copy below the dispatcher, so the data is given its twin here."""

    def __init__(self, device: _Device):
        super().__init__()
        self.device = device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.new_tensor and args and isinstance(args[0], torch.Tensor) \
                and kwargs.get("device", args[0].device) == _META and not isinstance(args[1] if len(args) > 1 else None, torch.Tensor):
            kwargs["device"] = _CPU
            return self.device.adopt(func(self.device.values(args[0]), *args[1:], **kwargs))
        if func in _FROM_DATA and args and not isinstance(args[0], torch.Tensor) \
                and kwargs.get("device") is not None and torch.device(kwargs["device"]) == _META:
            kwargs["device"] = _CPU
            return self.device.adopt(func(*args, **kwargs))
        return func(*args, **kwargs)


_FROM_DATA = (torch.tensor, torch.as_tensor, torch.asarray)


def _on_device(fn, *tensors):
    """``fn`` called on ``tensors`` moved to the stand-in device: (device of the result, its values, the
    inputs' values after the call)."""
    device = _Device()
    args = [device.put(t) for t in tensors]
    with dynamo_left_unloaded(), _NewData(device), device:
        result = fn(*args)
    if not isinstance(result, torch.Tensor):
        return {"device": None, "result": plain(result)}
    return {"device": str(result.device), "result": plain(device.values(result)),
            "inputs_after": [plain(device.values(a)) for a in args]}


def one_hot(namespace, inputs):
    fn = lookup(namespace, "one_hot")

    def valid(labels, classes):
        arg = labels.clone()
        result = fn(arg, classes)
        return {"result": plain(result), "labels_after": plain(arg)}

    def invalid(labels, classes):
        try:
            fn(labels.clone(), classes)
        except Exception as exc:
            return {"raised": type(exc).__name__, "is_value_error": isinstance(exc, ValueError),
                    "message": str(exc)[:300]}
        return {"raised": None}

    def other_default(labels, classes):
        with torch.device("meta"):       # a default device other than the labels': as on a GPU
            result = fn(labels.clone(), classes)
        return {"device": str(getattr(result, "device", None)), "result": plain(result)}

    return {
        "other_default": [attempt(other_default, labels, c) for labels, c in inputs["other_default"]],
        "on_device": [attempt(_on_device, lambda x, c=c: fn(x, c), labels) for labels, c in inputs["on_device"]],
        "valid": [attempt(valid, labels, c) for labels, c in inputs["valid"]],
        "invalid": [attempt(invalid, labels, c) for labels, c in inputs["invalid"]],
        "ops": attempt(torch_ops, fn, *inputs["ops_case"]),
        "scaling": [{"lines": attempt(student_lines, fn, labels, c), "ops": attempt(torch_ops, fn, labels, c)}
                    for labels, c in inputs["scaling"]],
    }


def pairwise_sq_distances(namespace, inputs):
    fn = lookup(namespace, "pairwise_sq_distances")

    def one(a, b):
        a_arg, b_arg = a.clone(), b.clone()
        result = fn(a_arg, b_arg)
        return {"result": plain(result), "a_after": plain(a_arg), "b_after": plain(b_arg)}

    def on_device(case):
        a = torch.randn(case["a"], device=case["device"])
        b = torch.randn(case["b"], device=case["device"])
        with torch.device(case["default"]) if case["default"] else contextlib.nullcontext():
            result = fn(a, b)
        return {"device": str(getattr(result, "device", None)), "shape": list(getattr(result, "shape", []))}

    def largest_tensor(a, b):
        """The largest tensor storage, or the peak of what Python's allocator traced (NumPy's arrays
        included), whichever is larger: a temporary built in NumPy counts too."""
        _trace_start()
        try:
            with _LargestTensor() as seen:
                fn(a, b)
            return max(seen.bytes, _traced()[1])
        finally:
            _trace_stop()

    return {key: [attempt(one, a, b) for a, b in inputs[key]] for key in ("cases", "far", "empty")} | {
        "devices": [attempt(on_device, case) for case in inputs["devices"]],
        "on_device": [attempt(_on_device, fn, a, b) for a, b in inputs["on_device"]],
        "largest_tensor": [attempt(largest_tensor, a, b) for a, b in inputs["memory"]],
        "ops": attempt(torch_ops, fn, *inputs["cases"][3])}


class _LargestTensor(TorchDispatchMode):
    """The largest storage any operation creates (expand views create none)."""
    def __init__(self):
        super().__init__()
        self.bytes = 0

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Left True, torch wraps __torch_dispatch__ in torch._disable_dynamo, whose first call imports
        # Dynamo: seconds of CPU in every sandbox, for a mode that never meets torch.compile.
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.bytes = max(self.bytes, int(t.untyped_storage().nbytes()))
        return out
