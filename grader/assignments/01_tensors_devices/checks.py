"""Checks for 01_tensors_devices: to_device_batch (T012/T016) and numpy_to_tensor_shared (T015/T019).

to_device_batch's clauses (the notebook's Exercise 1) and where each is checked; the batch nests a dict, a
namedtuple, lists, tuples (an empty one inside another), numbers, a string, None and a NumPy array:
  1 every tensor, at any depth, reaches the device asked for, whichever it is and however it is named:
    "meta" and torch.device("meta") from the cpu; "cpu", torch.device("cpu") and "cpu:0" from the cpu
    (values kept); "cpu" from another device (meta: torch is asked to copy out of it, and refuses, as for
    the reference); "cuda" and torch.device("cuda", 0) on a simulated GPU (torch.cuda reports one; a
    tensor counts as on it only when torch was asked for it). So an answer that hard-codes a device,
    skips tensors already on some device other than the one asked for, or ignores the device fails ...... moves
  2 ... keeping shape, dtype and values; a bare tensor and an nn.Parameter are moved too ................ moves
  3 each move gets non_blocking as given (default True), however Tensor.to is reached, or in the
    copy_ out of the tensor (empty_like(t, device=...).copy_(t, non_blocking=...)) ............ non_blocking
  4 a dict becomes a new dict, same keys in the same order; a list a new list, a tuple a tuple, a
    namedtuple the same namedtuple type, items in order .................................... structure
  5 every list and dict of the result is new, one without tensors too ............................ structure
  6 anything else (numbers, strings, None, NumPy arrays) comes back as the same object ........... structure
  7 batch is not modified ........................................................................ structure
  structure and non_blocking are judged on moves to meta, so an answer that only gets the device wrong
  loses the device's points (moves) alone.
numpy_to_tensor_shared's clauses (Exercise 2):
  1 a torch.Tensor on the cpu, same shape (any shape: 0-d and empty arrays included), the corresponding
    dtype (float32, int16, bool, float16, complex64, int8, int64, float64, uint8) and the same values .. shares, negative
  2 shares memory whenever no stride is negative: contiguous, .T, [:, ::2], slices, and zero strides
    (an axis added with None, a broadcast row made by as_strided), 0-d arrays and 0-d views; a write
    to either shows in the other ....................................................................... shares
  3 a copy with the same values when some stride is negative (flips along each axis, a step of -2, a
    negative stride beside a zero one, float16) ...................................................... negative
  4 arr is not modified ...................................................................... shares, negative
"""
from __future__ import annotations

from pathlib import Path

import torch

from grader.checking import AssignmentChecks, Evidence, Fail, equal, expect, probe_definitions, value

SHARED = probe_definitions(Path(__file__).parent)


def inputs() -> dict:
    g = torch.Generator().manual_seed(101)
    tensors = [torch.randn(2, 3, generator=g), torch.arange(4), torch.randn(3, generator=g),
               torch.ones(2, 2, dtype=torch.float64), torch.zeros(1, dtype=torch.bool), torch.randn(5, generator=g)]
    x = torch.randn(3, 4, generator=g)
    dtypes = {"bool": x > 0, "float16": torch.randn(6, generator=g).half(), "complex64": torch.complex(x, -x),
              "int8": torch.randint(-128, 128, (2, 5), generator=g, dtype=torch.int8),
              "int64": torch.randint(-10**12, 10**12, (5,), generator=g), "float64": x.double().T.contiguous()}
    return {"to_device_batch": {"tensors": tensors},
            "numpy_to_tensor_shared": {"float32": torch.randn(3, 4, generator=g),
                                       "int16": torch.arange(20, dtype=torch.int16).reshape(4, 5),
                                       "uint8": torch.randint(0, 256, (4, 6, 3), generator=g, dtype=torch.uint8),
                                       "dtypes": dtypes, "scalar": 2.5}}


def _reference(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _reference(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_reference(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_reference(v, device) for v in batch)
    return batch


def _expected(inputs: dict, device: str = "meta"):
    batch = SHARED["make_batch"](inputs["to_device_batch"]["tensors"])
    where = (lambda t: device) if device.startswith("cuda") else None
    return SHARED["describe"](_reference(batch, "cpu" if where else device), batch, where), SHARED["describe"](batch)


def _moves(evidence: Evidence) -> dict:
    return value(evidence.probe("to_device_batch")["moves"], "to_device_batch(batch, 'meta')")


def _tensor_leaves(description) -> list:
    if description[0] == "tensor":
        return [description]
    if description[0] == "dict":
        return [leaf for _, item in description[1] for leaf in _tensor_leaves(item)]
    if description[0] == "other":
        return []
    return [leaf for item in description[1] for leaf in _tensor_leaves(item)]


def _leaves_match(moved, expected, call: str) -> None:
    leaves, want = _tensor_leaves(moved), _tensor_leaves(expected)
    expect(len(leaves) == len(want), f"{call} found {len(leaves)} of the batch's {len(want)} tensors")
    for got, wanted in zip(leaves, want):
        expect(got[1] == wanted[1], f"{call} left a tensor on {got[1]!r}, not on the device asked for ({wanted[1]!r})")
    expect(leaves == want, f"{call} should move every tensor, at any depth, keeping shapes and dtypes")


def _to_meta(evidence: Evidence, inputs: dict) -> None:
    """Every tensor reaches meta from the cpu: the case the other tests build on."""
    rec = _moves(evidence)
    expected, _ = _expected(inputs)
    _leaves_match(rec["moved"], expected, "to_device_batch(batch, 'meta')")
    x = inputs["to_device_batch"]["tensors"][0]
    expect(rec["bare"] == ["tensor", "meta", list(x.shape), str(x.dtype)], "a bare tensor should be moved too")


def _device_case(evidence: Evidence, name: str, call: str) -> dict:
    devices = value(evidence.probe("to_device_batch")["devices"], "to_device_batch on other devices")
    return value(devices[name], call)


def batch_moves(evidence: Evidence, inputs: dict) -> None:
    _to_meta(evidence, inputs)
    tensors = inputs["to_device_batch"]["tensors"]
    expected, _ = _expected(inputs, "cpu")
    for name, device in (("cpu", "'cpu'"), ("cpu_device", "torch.device('cpu')"), ("cpu_index", "'cpu:0'")):
        call = f"to_device_batch(batch, {device}) on a batch on the cpu"
        rec = _device_case(evidence, name, call)
        _leaves_match(rec["moved"], expected, call)
        values = rec["values"]
        expect(isinstance(values, list) and len(values) == len(tensors), f"{call}: the tensors could not be read back")
        for got, original in zip(values, SHARED["_tensors"](SHARED["make_batch"](tensors)), strict=True):
            equal(got, original, f"{call}: a tensor's values")
    call = "to_device_batch(batch, 'cpu') on a batch on the meta device"
    devices = value(evidence.probe("to_device_batch")["devices"], "to_device_batch on other devices")
    rec = devices["from_meta"]
    refused = isinstance(rec, dict) and set(rec) == {"error"} and "copy out of meta tensor" in str(rec["error"]).lower()
    if not refused:
        moved = value(rec, call)["moved"]
        where = sorted({leaf[1] for leaf in _tensor_leaves(moved)} - {"cpu"})
        raise Fail(f"{call} returned tensors on {', '.join(map(repr, where)) or 'the cpu'} without asking torch to "
                   "copy them to the cpu (a meta tensor has no data: torch refuses that copy, as it should)")
    expected, _ = _expected(inputs, "cuda:0")
    call = "to_device_batch(batch, 'cuda') on a machine with a (simulated) GPU"
    rec = _device_case(evidence, "gpu", call)
    _leaves_match(rec["moved"], expected, call)
    x = tensors[0]
    expect(rec["bare"] == ["tensor", "cuda:0", list(x.shape), str(x.dtype)],
           "to_device_batch(nn.Parameter(...), torch.device('cuda', 0)) should move the parameter to that GPU")


def batch_structure(evidence: Evidence, inputs: dict) -> None:
    _to_meta(evidence, inputs)
    rec = _moves(evidence)
    expected, original = _expected(inputs)
    expect(rec["moved"] == expected, "to_device_batch should keep every container's type (dict key order, list, "
           "tuple, namedtuple) and return everything else unchanged")
    expect(rec["array_same"] is True and rec["text_same"] is True, "non-tensors must come back as the same objects")
    expect(rec["new_containers"] == [], f"the result hands back the input's own containers at "
           f"{', '.join(rec['new_containers'])} instead of new ones (a list or dict without tensors too): changing the copy would change the batch")
    expect(rec["inputs_on_cpu"] == original, "to_device_batch must not modify its input")


def batch_non_blocking(evidence: Evidence, inputs: dict) -> None:
    _to_meta(evidence, inputs)
    calls = value(evidence.probe("to_device_batch")["non_blocking"], "to_device_batch with non_blocking")
    expect(calls == [[False, False], [True, True], [True, True]],
           f"Tensor.to should receive non_blocking as given (default True); it received {calls}")


def _shares(evidence: Evidence) -> dict:
    return value(evidence.probe("numpy_to_tensor_shared")["shares"], "numpy_to_tensor_shared")


def numpy_shares(evidence: Evidence, inputs: dict) -> None:
    rec = _shares(evidence)
    data = inputs["numpy_to_tensor_shared"]
    expect(rec["type_ok"] is True, "numpy_to_tensor_shared should return a torch.Tensor")
    equal(rec["result"], data["float32"], "numpy_to_tensor_shared on a float32 array")
    expect(rec["array_to_tensor"] is True and rec["tensor_to_array"] is True,
           "the tensor must share memory with the array (a write to one shows in the other)")
    base = data["int16"]
    for view, got in zip([base.T, base[:, ::2], base[1:3, 1:]], rec["views"], strict=True):
        equal(got["result"], view, "numpy_to_tensor_shared on a strided view")
        expect(got["shares"] is True, "views with positive strides (.T, [:, ::2]) should share memory, not copy")
    _shapes(evidence, data)


# what each case of the probe's shapes() holds, and how the student is told about it
_SHAPES = {"0-d array": "a 0-d array (np.array(2.5))", "0-d view": "a 0-d view (arr[1, 2, ...])",
           "None axis": "arr[:, None] (a zero stride)", "leading None axis": "arr[None] (a zero stride)",
           "broadcast row": "a row repeated by a zero stride (as_strided, strides (0, 2))",
           "empty": "an empty float32 array of shape (0, 3)"}


def _shapes(evidence: Evidence, data: dict) -> None:
    """Any shape, zero strides and other dtypes: the values, and memory shared with the array."""
    rec = value(evidence.probe("numpy_to_tensor_shared")["shapes"], "numpy_to_tensor_shared")
    base = data["int16"]
    expected = {"0-d array": torch.tensor(data["scalar"], dtype=torch.float64), "0-d view": base[1, 2],
                "None axis": base[:, None], "leading None axis": base[None],
                "broadcast row": base[0].expand(3, base.shape[1]), "empty": torch.zeros(0, 3),
                **data["dtypes"]}
    for name, want in expected.items():
        what = f"numpy_to_tensor_shared on {_SHAPES.get(name, f'a {name} array')}"
        got = value(rec[name], what)
        equal(got["result"], want.contiguous(), what)
        if name != "empty":   # an empty array has no memory to share
            expect(got["shares"] is True, f"{what} should share memory with the array (no stride is negative), not copy")
    equal(rec["base_after"], base, "numpy_to_tensor_shared must not modify the array")


def numpy_negative(evidence: Evidence, inputs: dict) -> None:
    _shares(evidence)
    rec = value(evidence.probe("numpy_to_tensor_shared")["negative"], "numpy_to_tensor_shared on reversed views")
    data = inputs["numpy_to_tensor_shared"]
    base, image = data["int16"], data["uint8"]
    views = [base.flip(0), base.flip(1), base.flip(0)[::2, 1::2], base.flip(0, 1), image.flip(1), image.flip(2),
             base.flip(0)[:, None], data["dtypes"]["float16"].flip(0)]
    for view, got in zip(views, rec["results"], strict=True):
        equal(got, view.contiguous(), "numpy_to_tensor_shared on an array with negative strides")
    equal(rec["base_after"], base, "numpy_to_tensor_shared must not modify the array")
    equal(rec["image_after"], image, "numpy_to_tensor_shared must not modify the array")


CHECKS = AssignmentChecks(
    inputs=inputs,
    tests={
        "test_to_device_batch_moves": batch_moves,
        "test_to_device_batch_structure": batch_structure,
        "test_to_device_batch_non_blocking": batch_non_blocking,
        "test_numpy_to_tensor_shared_shares": numpy_shares,
        "test_numpy_to_tensor_shared_negative": numpy_negative,
    },
)
