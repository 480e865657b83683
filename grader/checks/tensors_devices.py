"""Checks for 01_tensors_devices: to_device_batch (T012/T016) and numpy_to_tensor_shared (T015/T019)."""
from __future__ import annotations

import torch

from . import AssignmentChecks, Evidence, equal, expect, probe_definitions, value

SHARED = probe_definitions("tensors_devices")


def inputs() -> dict:
    g = torch.Generator().manual_seed(101)
    tensors = [torch.randn(2, 3, generator=g), torch.arange(4), torch.randn(3, generator=g),
               torch.ones(2, 2, dtype=torch.float64), torch.zeros(1, dtype=torch.bool), torch.randn(5, generator=g)]
    return {"to_device_batch": {"tensors": tensors},
            "numpy_to_tensor_shared": {"float32": torch.randn(3, 4, generator=g),
                                       "int16": torch.arange(20, dtype=torch.int16).reshape(4, 5),
                                       "uint8": torch.randint(0, 256, (4, 6, 3), generator=g, dtype=torch.uint8)}}


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


def _expected(inputs: dict):
    batch = SHARED["make_batch"](inputs["to_device_batch"]["tensors"])
    return SHARED["describe"](_reference(batch, "meta"), batch), SHARED["describe"](batch)


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


def batch_moves(evidence: Evidence, inputs: dict) -> None:
    rec = _moves(evidence)
    expected, _ = _expected(inputs)
    leaves, want = _tensor_leaves(rec["moved"]), _tensor_leaves(expected)
    expect(len(leaves) == len(want), f"to_device_batch found {len(leaves)} of the batch's {len(want)} tensors")
    expect(leaves == want, "to_device_batch should move every tensor, at any depth, keeping shapes and dtypes")
    x = inputs["to_device_batch"]["tensors"][0]
    expect(rec["bare"] == ["tensor", "meta", list(x.shape), str(x.dtype)], "a bare tensor should be moved too")


def batch_structure(evidence: Evidence, inputs: dict) -> None:
    batch_moves(evidence, inputs)
    rec = _moves(evidence)
    expected, original = _expected(inputs)
    expect(rec["moved"] == expected, "to_device_batch should keep every container's type (dict key order, list, "
           "tuple, namedtuple) and return everything else unchanged")
    expect(rec["array_same"] is True and rec["text_same"] is True, "non-tensors must come back as the same objects")
    expect(rec["new_containers"] == [], f"the result hands back the input's own containers at "
           f"{', '.join(rec['new_containers'])} instead of new ones (a list or dict without tensors too): changing the copy would change the batch")
    expect(rec["inputs_on_cpu"] == original, "to_device_batch must not modify its input")


def batch_non_blocking(evidence: Evidence, inputs: dict) -> None:
    batch_moves(evidence, inputs)
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


def numpy_negative(evidence: Evidence, inputs: dict) -> None:
    _shares(evidence)
    rec = value(evidence.probe("numpy_to_tensor_shared")["negative"], "numpy_to_tensor_shared on reversed views")
    data = inputs["numpy_to_tensor_shared"]
    base, image = data["int16"], data["uint8"]
    views = [base.flip(0), base.flip(1), base.flip(0)[::2, 1::2], base.flip(0, 1), image.flip(1), image.flip(2)]
    for view, got in zip(views, rec["results"], strict=True):
        equal(got, view.contiguous(), "numpy_to_tensor_shared on an array with negative strides")
    equal(rec["base_after"], base, "numpy_to_tensor_shared must not modify the array")
    equal(rec["image_after"], image, "numpy_to_tensor_shared must not modify the array")


CHECKS = AssignmentChecks(
    assignment="01_tensors_devices",
    probe_module="tensors_devices",
    inputs=inputs,
    tests={
        "test_to_device_batch_moves": batch_moves,
        "test_to_device_batch_structure": batch_structure,
        "test_to_device_batch_non_blocking": batch_non_blocking,
        "test_numpy_to_tensor_shared_shares": numpy_shares,
        "test_numpy_to_tensor_shared_negative": numpy_negative,
    },
)
