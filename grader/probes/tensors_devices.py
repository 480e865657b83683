"""Probes for 01_tensors_devices (run in the sandbox; see common.py)."""
import collections

import numpy as np
import torch

Pair = collections.namedtuple("Pair", ["inputs", "target"])


def make_batch(tensors):
    """The nested batch both sides build from the same tensors."""
    a, b, c, d, e, f = tensors
    return {"image": a, "meta": {"ids": b, "names": ["x", "y"], "scale": 0.5, "none": None},
            "pair": Pair(c, [d, (e,)]), "array": np.arange(3), "empty": [], "nested_empty": ((),), "text": "hi",
            "items": [f, 3]}


def describe(obj, original=None):
    """A plain description of a (moved) batch: structure, types, tensor devices, shapes, dtypes."""
    if isinstance(obj, torch.Tensor):
        return ["tensor", obj.device.type, list(obj.shape), str(obj.dtype)]
    if type(obj) is dict:
        return ["dict", [[str(k), describe(v, original.get(k) if isinstance(original, dict) else None)]
                         for k, v in obj.items()]]
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return ["namedtuple:" + type(obj).__name__, [describe(v) for v in obj]]
    if type(obj) in (list, tuple):
        return [type(obj).__name__, [describe(v) for v in obj]]
    same = original is obj if original is not None else None
    return ["other", type(obj).__name__, repr(obj)[:60], same]


def _new_containers(moved, original, path: str = "batch") -> list[str]:
    """Where (``batch['meta']['names']``) the result hands back one of the input's own lists or dicts,
    tensors in them or not: a caller who changes the copy would change the batch. (Tuples cannot
    change, and Python shares its empty tuple anyway.)"""
    shared = [path] if type(original) in (dict, list) and moved is original else []
    if type(original) is dict and type(moved) is dict:
        return shared + [w for k in original if k in moved for w in _new_containers(moved[k], original[k], f"{path}[{k!r}]")]
    if isinstance(original, (list, tuple)) and isinstance(moved, (list, tuple)) and len(moved) == len(original):
        return shared + [w for i, (m, o) in enumerate(zip(moved, original)) for w in _new_containers(m, o, f"{path}[{i}]")]
    return shared


class _Recorder(torch.Tensor):
    """Records the non_blocking flag of every Tensor.to call on it, however the answer makes the call
    (``t.to(...)``, ``torch.Tensor.to(t, ...)``, a ``functools.partial`` of it)."""
    calls = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") == "to":
            cls.calls.append(bool(torch._C._nn._parse_to(*args[1:], **kwargs)[2]))  # (device, dtype, non_blocking, ...)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


def to_device_batch(namespace, inputs):
    fn = lookup(namespace, "to_device_batch")

    def moves():
        batch = make_batch(inputs["tensors"])
        moved = fn(batch, "meta")
        bare = fn(inputs["tensors"][0], torch.device("meta"))
        return {"moved": describe(moved, batch), "bare": describe(bare), "new_containers": _new_containers(moved, batch),
                "array_same": moved.get("array") is batch["array"] if isinstance(moved, dict) else False,
                "inputs_on_cpu": describe(batch), "text_same": moved.get("text") is batch["text"]
                if isinstance(moved, dict) else False}

    def non_blocking():
        out = []
        for kwargs in ({"non_blocking": False}, {"non_blocking": True}, {}):
            _Recorder.calls = []
            t = torch.ones(2).as_subclass(_Recorder)
            fn([t, {"k": t}], "meta", **kwargs)   # a real move: no answer may skip it as already done
            out.append(list(_Recorder.calls))
        return out

    return {"moves": attempt(moves), "non_blocking": attempt(non_blocking)}


def numpy_to_tensor_shared(namespace, inputs):
    fn = lookup(namespace, "numpy_to_tensor_shared")

    def shares():
        arr = inputs["float32"].numpy().copy()
        t = fn(arr)
        out = {"type_ok": type(t) is torch.Tensor, "result": plain(t)}
        arr[0, 0] = 42.0
        out["array_to_tensor"] = float(t[0, 0]) == 42.0
        t[1, 1] = -7.0
        out["tensor_to_array"] = float(arr[1, 1]) == -7.0
        base = inputs["int16"].numpy().copy()
        views = [base.T, base[:, ::2], base[1:3, 1:]]
        out["views"] = []
        for view in views:
            r = fn(view)
            out["views"].append({"result": plain(r), "shares": bool(np.shares_memory(r.numpy(), base))})
        return out

    def negative():
        base = inputs["int16"].numpy().copy()
        image = inputs["uint8"].numpy().copy()
        views = [base[::-1], base[:, ::-1], base[::-2, 1::2], np.flip(base), image[:, ::-1], image[..., ::-1]]
        results = [plain(fn(view)) for view in views]
        return {"results": results, "base_after": plain(torch.from_numpy(base.copy())),
                "image_after": plain(torch.from_numpy(image.copy()))}

    return {"shares": attempt(shares), "negative": attempt(negative)}
