"""Probes for 02_tensor_toolbox (run in the sandbox; see common.py)."""
import contextlib
import tracemalloc

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

_trace_start, _trace_stop, _traced = tracemalloc.start, tracemalloc.stop, tracemalloc.get_traced_memory


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
