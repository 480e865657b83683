"""Probes for 01_tensors_devices (run in the sandbox after grader/probe_helpers.py)."""
import collections

import numpy as np
import torch

from utils.simulated_cuda import simulate_cuda, without_cuda  # bound before any student code runs

Pair = collections.namedtuple("Pair", ["inputs", "target"])


def make_batch(tensors):
    """The nested batch both sides build from the same tensors."""
    a, b, c, d, e, f = tensors
    return {"image": a, "meta": {"ids": b, "names": ["x", "y"], "scale": 0.5, "none": None},
            "pair": Pair(c, [d, (e,)]), "array": np.arange(3), "empty": [], "nested_empty": ((),), "text": "hi",
            "items": [f, 3]}


def describe(obj, original=None, where=None):
    """A plain description of a (moved) batch: structure, types, tensor devices, shapes, dtypes.
    ``where``: the device a tensor is on, when not its own ``.device`` (the simulated GPU's)."""
    if isinstance(obj, torch.Tensor):
        return ["tensor", where(obj) if where else obj.device.type, list(obj.shape), str(obj.dtype)]
    if type(obj) is dict:
        return ["dict", [[str(k), describe(v, original.get(k) if isinstance(original, dict) else None, where)]
                         for k, v in obj.items()]]
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return ["namedtuple:" + type(obj).__name__, [describe(v, None, where) for v in obj]]
    if type(obj) in (list, tuple):
        return [type(obj).__name__, [describe(v, None, where) for v in obj]]
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
    (``t.to(...)``, ``torch.Tensor.to(t, ...)``, a ``functools.partial`` of it), and of every copy
    out of it (``torch.empty_like(t, device=...).copy_(t, non_blocking=...)``)."""
    calls = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name == "to":
            parsed = {k: v for k, v in kwargs.items() if k != "copy"}
            cls.calls.append(bool(torch._C._nn._parse_to(*args[1:], **parsed)[2]))  # (device, dtype, non_blocking, ...)
        elif name == "copy_" and len(args) > 1 and isinstance(args[1], cls):
            cls.calls.append(bool(kwargs.get("non_blocking", args[2] if len(args) > 2 else False)))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


def _tensors(obj) -> list:
    """The tensors of a (moved) batch, in the order ``describe`` lists them."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if type(obj) is dict:
        return [t for v in obj.values() for t in _tensors(v)]
    if isinstance(obj, tuple) and hasattr(obj, "_fields") or type(obj) in (list, tuple):
        return [t for v in obj for t in _tensors(v)]
    return []


_parse_to, _tensor_to, _tensor_clone = torch._C._nn._parse_to, torch.Tensor.to, torch.Tensor.clone


class _SimulatedGpu(torch.overrides.TorchFunctionMode):
    """A GPU for moves, on a machine without one: a torch call asked for a "cuda" device (``Tensor.to``,
    ``Tensor.cuda``, a ``device=`` argument such as ``torch.empty_like(t, device=...)``) makes a meta
    tensor instead (shape and dtype, no data), noted in ``made`` with the device asked for;
    ``pin_memory`` copies. Only tensors noted there count as on the GPU."""

    def __init__(self):
        super().__init__()
        self.made, self.pinned = {}, set()

    def _mark(self, out, device):
        if isinstance(out, torch.Tensor):
            self.made[id(out)] = (out, f"cuda:{0 if device.index is None else device.index}")  # keeps it alive
        return out

    def where(self, t) -> str:
        return self.made[id(t)][1] if id(t) in self.made else t.device.type

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        this = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if name == "to" and this is not None:
            parsed = {k: v for k, v in kwargs.items() if k != "copy"}
            try:
                device, dtype, non_blocking, layout = _parse_to(*args[1:], **parsed)
            except TypeError:                       # to(device, dtype, non_blocking, copy): copy by position
                device, dtype, non_blocking, layout = _parse_to(*args[1:-1], **parsed)
            if device is not None and device.type == "cuda":
                extra = {} if layout is None else {"memory_format": layout}
                return self._mark(_tensor_to(this, "meta", dtype, bool(non_blocking), **extra), device)
        elif name == "cuda" and this is not None:
            index = kwargs.get("device", args[1] if len(args) > 1 else None)
            device = torch.device("cuda", index) if isinstance(index, int) else torch.device(index or "cuda")
            return self._mark(_tensor_to(this, "meta", non_blocking=bool(kwargs.get("non_blocking", False))), device)
        elif name == "pin_memory" and this is not None:
            out = _tensor_clone(this)
            self.pinned.add(id(out))
            self.made[-id(out)] = (out, None)           # kept alive, so its id stays its own
            return out
        elif name == "is_pinned" and this is not None:
            return id(this) in self.pinned
        elif isinstance(kwargs.get("device"), (str, int, torch.device)):
            device = kwargs["device"]
            try:
                device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
            except (RuntimeError, ValueError):          # not a device: torch's own call says so
                return func(*args, **kwargs)
            if device.type == "cuda":
                kwargs["device"] = "meta"
                return self._mark(func(*args, **kwargs), device)
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

    def to_cpu(device):
        """From the cpu to the cpu, however the device is named: the tensors' values come back."""
        batch = make_batch(inputs["tensors"])
        moved = fn(batch, device)
        return {"moved": describe(moved, batch), "values": [plain(t) for t in _tensors(moved)]}

    def from_meta():
        """From another device (meta) to the cpu: torch must be asked to copy out of it, which it refuses."""
        batch = make_batch([t.to("meta") for t in inputs["tensors"]])
        return {"moved": describe(fn(batch, "cpu"))}

    def to_gpu():
        """To a simulated GPU, on a machine whose torch.cuda reports one device."""
        with without_cuda(), simulate_cuda(), _SimulatedGpu() as gpu:
            batch = make_batch(inputs["tensors"])
            moved = fn(batch, "cuda")
            bare = fn(torch.nn.Parameter(inputs["tensors"][0].clone()), torch.device("cuda", 0))
            return {"moved": describe(moved, batch, gpu.where), "bare": describe(bare, None, gpu.where)}

    devices = {"cpu": lambda: to_cpu("cpu"), "cpu_device": lambda: to_cpu(torch.device("cpu")),
               "cpu_index": lambda: to_cpu("cpu:0"), "from_meta": from_meta, "gpu": to_gpu}
    return {"moves": attempt(moves), "non_blocking": attempt(non_blocking),
            "devices": {name: attempt(case) for name, case in devices.items()}}


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

    def shapes():
        """Any shape and any non-negative strides: 0-d arrays, zero strides (an axis added with None, a
        broadcast row), an empty array, other dtypes. Each: the result, whether it shares the array's memory."""
        base = inputs["int16"].numpy().copy()
        arrays = {name: t.numpy().copy() for name, t in inputs["dtypes"].items()}
        scalar = np.array(inputs["scalar"])
        row = np.lib.stride_tricks.as_strided(base[0], shape=(3, base.shape[1]), strides=(0, base.strides[1]))
        cases = {"0-d array": (scalar, scalar), "0-d view": (base[1, 2, ...], base), "None axis": (base[:, None], base),
                 "leading None axis": (base[None], base), "broadcast row": (row, base),
                 "empty": (np.zeros((0, 3), dtype=np.float32), None), **{name: (a, a) for name, a in arrays.items()}}
        out = {}
        for name, (arr, owner) in cases.items():
            def one(arr=arr, owner=owner):
                r = fn(arr)
                shared = bool(np.shares_memory(r.numpy(), owner)) if owner is not None and type(r) is torch.Tensor else None
                return {"result": plain(r), "shares": shared}
            out[name] = attempt(one)
        out["base_after"] = plain(torch.from_numpy(base.copy()))
        return out

    def negative():
        base = inputs["int16"].numpy().copy()
        image = inputs["uint8"].numpy().copy()
        half = inputs["dtypes"]["float16"].numpy().copy()
        views = [base[::-1], base[:, ::-1], base[::-2, 1::2], np.flip(base), image[:, ::-1], image[..., ::-1],
                 base[::-1, None], half[::-1]]
        results = [plain(fn(view)) for view in views]
        return {"results": results, "base_after": plain(torch.from_numpy(base.copy())),
                "image_after": plain(torch.from_numpy(image.copy()))}

    return {"shares": attempt(shares), "shapes": attempt(shapes), "negative": attempt(negative)}
