"""Checks for 02_tensor_toolbox: one_hot (T026) and pairwise_sq_distances (T030).

one_hot's clauses (the notebook's Exercise 1) and where each is checked:
  1 int64, shape (N, num_classes), a 1 at [i, labels[i]], 0 elsewhere (repeated labels, unused classes) ... one_hot_values
  2 the result on labels.device, every tensor made on the way too: labels on the CPU under meta as the
    default device give a CPU result; labels on a second device that holds data (the probes' stand-in
    for a GPU, on "meta") give a result there, with the right values: device="cpu" (or "meta") in the
    code fails, by a device mismatch or a result elsewhere ........................................ one_hot_values
  3 built with scatter_/scatter (a scatter writes the N labels into N x C numbers), no F.one_hot (by
    name, by a computed name, under DisableTorchFunction: the profiler sees it), no Python loop over the
    labels (lines and torch calls do not grow with N) ............................................. one_hot_no_builtin
  4 a label < 0 or >= num_classes raises ValueError with a message; 0 and num_classes - 1 are valid ... one_hot_range
  5 N = 0 gives shape (0, num_classes) ........................................................... one_hot_values
  6 labels unmodified (on the CPU and on the second device) ...................................... one_hot_values
pairwise_sq_distances's clauses (Exercise 2):
  1 shape (..., m, n) with the batch dimensions broadcast as in a @ b.mT; exact squared distances
    within rtol = atol = 1e-4 in float32, 1e-10 in float64 ................................. pairwise_values
  2 dtype of a; device of a, every tensor made on a.device: CPU inputs under meta as the default device
    give a CPU result; inputs on the second device (meta holding data) give a result there with the
    right values, so device="cpu" fails ........................................................ pairwise_edges
  3 finite and never negative; empty when m = 0 or n = 0 .......................................... pairwise_edges
  4 accurate far from the origin, each batch at its own offset: float32 within atol 1e-3 (1e-5 for tiny
    distances in <= 8 dimensions), float64 within 1e-10 there too (the uncentred identity, even computed
    in float64, is off by ~1e-8 there) ......................................................... pairwise_far
  5 no temporary growing with m * n * d: at 384 x 64 every tensor (or NumPy's traced peak) under a
    quarter of the whole difference; doubling m and n at most triples it (a fixed number of chunks
    quadruples); at m = n = 128 each temporary at most a quarter of the whole (64-row chunks fail) ... pairwise_no_cdist
  6 a and b unmodified (on the CPU and on the second device) ...................................... pairwise_edges
  7 no torch.cdist / pdist / F.pairwise_distance (by name in the source, or as an operator that ran) . pairwise_no_cdist
Each single-clause check also needs the answer to work on ordinary input, so an empty function earns nothing.
"""
from __future__ import annotations

import math

import torch

from grader.checking import AssignmentChecks, Evidence, Fail, equal, expect, tensor, uses, value

INVALID = [([0, 3, 1], 3), ([-1, 0], 3), ([0, 1, 7], 4), ([-5], 2), ([2, 9, 0, 1], 9)]
PAIR_SHAPES = [((5, 4), (3, 4)), ((1, 2), (7, 2)), ((40, 16), (25, 16)), ((3, 6, 4), (3, 5, 4)),
               ((3, 6, 4), (5, 4)), ((2, 1, 7, 3), (4, 5, 3)), ((5, 9, 2), (1, 9, 2))]
FORBIDDEN_DISTANCE = {"cdist", "pdist", "pairwise_distance", "_cdist_forward", "_euclidean_dist"}


def inputs() -> dict:
    g = torch.Generator().manual_seed(202)
    t = lambda values: torch.tensor(values, dtype=torch.int64)  # noqa: E731
    valid = [(t([2, 0, 1, 2]), 3), (t([4, 4, 0]), 6), (torch.randint(0, 10, (1000,), generator=g), 10),
             (t([]), 5), (t([0, 0, 0]), 1), (t([0, 2]), 3), (torch.randint(0, 37, (300,), generator=g), 37)]
    scaling = [(torch.randint(0, 7, (10,), generator=g), 7), (torch.randint(0, 7, (3000,), generator=g), 7)]
    rand = lambda *shape, dtype=torch.float32: torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
    cases = [(torch.tensor([[0.0, 0.0], [1.0, 1.0]]), torch.tensor([[3.0, 4.0]]))]
    cases += [(rand(*sa), rand(*sb)) for sa, sb in PAIR_SHAPES]
    cases += [(rand(2, 6, 3, dtype=torch.float64), rand(2, 4, 3, dtype=torch.float64))]
    offsets = torch.tensor([1000.0, -2000.0, 500.0, 3000.0]).view(4, 1, 1)
    far_a = rand(4, 20, 16) + offsets
    far_b = torch.cat([far_a[:, :12] + 0.5 * rand(4, 12, 16), rand(4, 9, 16) + offsets], dim=1)
    near = rand(32, 8) * 0.01 + 100.0
    far = [(far_a, far_b), (far_a[1], far_b[1]), (near, near + 0.001 * rand(32, 8)), (near - 300.0, near - 300.0)]
    # the same in float64, where 1e-10 holds too: the identity, uncentred, is off by about 1e-8 there
    far64_a = rand(4, 20, 16, dtype=torch.float64) + offsets.double()
    far64_b = torch.cat([far64_a[:, :12] + 0.5 * rand(4, 12, 16, dtype=torch.float64),
                         rand(4, 9, 16, dtype=torch.float64) + offsets.double()], dim=1)
    far += [(far64_a, far64_b), (far64_a[3], far64_a[3] + 0.001 * rand(20, 16, dtype=torch.float64))]
    empty = [(rand(0, 5), rand(4, 5)), (rand(3, 5), rand(0, 5)), (rand(2, 3, 5), rand(2, 0, 5)), (rand(0, 5), rand(0, 5))]
    # Inputs on the CPU under another default device, as with inputs on a GPU, then inputs on "meta" (no
    # data; it catches device="cpu" too, at a price: torch's meta kernels import torch._dynamo, ~1 s).
    devices = [{"a": [3, 7, 4], "b": [5, 4], "device": "cpu", "default": "meta", "shape": [3, 7, 5]},
               {"a": [2, 1, 3, 4], "b": [6, 2, 4], "device": "cpu", "default": "meta", "shape": [2, 6, 3, 2]},
               {"a": [4, 3], "b": [5, 3], "device": "cpu", "default": "meta", "shape": [4, 5]},
               {"a": [0, 3], "b": [5, 3], "device": "cpu", "default": "meta", "shape": [0, 5]},
               {"a": [2, 3, 3], "b": [0, 3], "device": "cpu", "default": "meta", "shape": [2, 3, 0]}]
    # Inputs on a second device that holds data (the probes' stand-in for a GPU, on "meta"): values read back.
    on_device = [(rand(3, 7, 4), rand(5, 4)), (rand(2, 6, 3, dtype=torch.float64), rand(2, 4, 3, dtype=torch.float64)),
                 (rand(40, 16), rand(25, 16)), (rand(0, 3), rand(5, 3)), (rand(2, 3, 3), rand(0, 3))]
    return {"one_hot": {"valid": valid, "invalid": [(t(v), c) for v, c in INVALID], "ops_case": (t([1, 0, 2, 4]), 5),
                        "scaling": scaling, "other_default": [(t([1, 0, 2]), 3), (t([]), 4)],
                        "on_device": [(t([2, 0, 1, 2]), 3), (t([]), 4), (torch.randint(0, 9, (50,), generator=g), 9)]},
            "pairwise_sq_distances": {"cases": cases, "far": far, "empty": empty, "devices": devices,
                                      "on_device": on_device,
                                      "memory": [(rand(384, 64), rand(384, 64)),  # then m and n doubled:
                                                 (torch.zeros(768, 64), torch.zeros(768, 64)),
                                                 (rand(128, 64), rand(128, 64))]}}  # and small


# ---- one_hot ---------------------------------------------------------------------------------

def one_hot_values(evidence: Evidence, inputs: dict, cases: slice = slice(None)) -> None:
    results = evidence.probe("one_hot")["valid"]
    pairs = list(zip(inputs["one_hot"]["valid"], results, strict=True))[cases]
    for (labels, classes), rec in pairs:
        what = f"one_hot({labels.tolist()[:6]}{'...' if len(labels) > 6 else ''}, {classes})"
        rec = value(rec, what)
        expected = torch.zeros(len(labels), classes, dtype=torch.int64)
        expected[torch.arange(len(labels)), labels] = 1
        equal(rec["result"], expected, what)
        equal(rec["labels_after"], labels, f"{what}: labels must not be modified")
    if cases != slice(None):
        return
    for (labels, classes), rec in zip(inputs["one_hot"]["other_default"], evidence.probe("one_hot")["other_default"],
                                      strict=True):
        what = f"one_hot({labels.tolist()}, {classes}) with labels on cpu and meta as the default device"
        rec = value(rec, what)
        expect(rec["device"] == "cpu", f"{what} returned a result on {rec['device']}: create the output on "
                                       "labels.device (with labels on a GPU it would land on the CPU)")
        expected = torch.zeros(len(labels), classes, dtype=torch.int64)
        expected[torch.arange(len(labels)), labels] = 1
        equal(rec["result"], expected, what)
    for (labels, classes), rec in zip(inputs["one_hot"]["on_device"], evidence.probe("one_hot")["on_device"],
                                      strict=True):
        what = f"one_hot({labels.tolist()[:6]}{'...' if len(labels) > 6 else ''}, {classes}) with labels on a second device"
        rec = value(rec, what + " (meta, holding data here, stands in for a GPU: make every tensor on labels.device)")
        expect(rec["device"] == "meta", f"{what} (meta, standing in for a GPU) returned a result on {rec['device']}: "
                                        "create the output on labels.device, not on a device named in the code")
        expected = torch.zeros(len(labels), classes, dtype=torch.int64)
        expected[torch.arange(len(labels)), labels] = 1
        equal(rec["result"], expected, what)
        equal(rec["inputs_after"][0], labels, f"{what}: labels must not be modified")


# Checks of one requirement (an error raised, a tool not used) also need the answer to work on
# ordinary input: otherwise `raise ValueError` alone, or an empty function, would earn them.
def _one_hot_works(evidence: Evidence, inputs: dict) -> None:
    one_hot_values(evidence, inputs, slice(0, 1))
    one_hot_values(evidence, inputs, slice(5, 6))  # the boundary labels 0 and num_classes - 1


def one_hot_range(evidence: Evidence, inputs: dict) -> None:
    _one_hot_works(evidence, inputs)
    results = evidence.probe("one_hot")["invalid"]
    for (labels, classes), rec in zip(inputs["one_hot"]["invalid"], results, strict=True):
        what = f"one_hot({labels.tolist()}, {classes})"
        rec = value(rec, what)
        expect(rec["raised"] is not None, f"{what} should raise ValueError: labels must lie in [0, {classes})")
        expect(rec["is_value_error"] is True, f"{what} raised {rec['raised']}: {str(rec.get('message'))[:200]} "
                                              f"(expected a ValueError: labels must lie in [0, {classes}))")
        expect(bool(str(rec["message"]).strip()), f"{what}: give the ValueError a message")


def one_hot_scatter(evidence: Evidence, inputs: dict) -> None:
    _one_hot_works(evidence, inputs)
    used = uses(evidence.sources.get("one_hot", ""), {"one_hot"})
    expect(not used, "one_hot uses F.one_hot: build the encoding with scatter_ or scatter")
    data = evidence.probe("one_hot")
    labels, classes = inputs["one_hot"]["ops_case"]
    ops = value(data["ops"], f"one_hot({labels.tolist()}, {classes})")
    expect("one_hot" not in ops["names"], "one_hot calls torch.nn.functional.one_hot: build it with scatter_ or scatter")
    # the scatter that builds the encoding: into N x C numbers (in any shape: N x C, C x N, flat), one index a label
    n = len(labels)
    expect(any(len(shapes) > 2 and math.prod(shapes[0]) == n * classes and math.prod(shapes[2]) == n
               for shapes in ops["scatters"]),
           f"one_hot does not build its result with scatter_ or scatter: no scatter wrote {n} labels into a "
           f"tensor of {n} x {classes} numbers")
    small, large = (value(s["lines"], "one_hot line count") for s in data["scaling"])
    small_ops, large_ops = (value(s["ops"], "one_hot op count")["count"] for s in data["scaling"])
    expect(large <= small + 10 and large_ops <= small_ops + 10,
           "one_hot does work for every label in Python (a loop or comprehension): vectorise it with scatter_")


# ---- pairwise_sq_distances -------------------------------------------------------------------

def _pair_results(evidence: Evidence, inputs: dict, key: str = "cases", cases: slice = slice(None)):
    pairs = list(zip(inputs["pairwise_sq_distances"][key], evidence.probe("pairwise_sq_distances")[key], strict=True))
    for (a, b), rec in pairs[cases]:
        what = f"pairwise_sq_distances(a of shape {tuple(a.shape)}, b of shape {tuple(b.shape)})"
        yield a, b, value(rec, what), what


def _reference(a, b):
    return ((a.double().unsqueeze(-2) - b.double().unsqueeze(-3)) ** 2).sum(-1)


def _matches(a, b, rec, what, rtol: float, atol: float) -> None:
    result = tensor(rec["result"], what)
    expect(result.dtype == a.dtype, f"{what}: dtype {result.dtype}, expected {a.dtype}")
    expected = _reference(a, b)
    expect(result.shape == expected.shape, f"{what}: shape {tuple(result.shape)}, expected {tuple(expected.shape)}")
    if not torch.allclose(result.double(), expected, rtol=rtol, atol=atol):
        worst = (result.double() - expected).abs().max().item()
        raise Fail(f"{what}: values differ from the exact squared distances by up to {worst:.3g}")


def pairwise_values(evidence: Evidence, inputs: dict, cases: slice = slice(None)) -> None:
    for a, b, rec, what in _pair_results(evidence, inputs, cases=cases):
        tolerance = 1e-10 if a.dtype == torch.float64 else 1e-4
        _matches(a, b, rec, what, tolerance, tolerance)


def _far_tolerance(a) -> tuple[float, float]:
    if a.dtype == torch.float64:
        return 1e-10, 1e-10
    return 1e-4, 1e-3 if a.shape[-1] > 8 else 1e-5


def pairwise_far(evidence: Evidence, inputs: dict) -> None:
    pairwise_values(evidence, inputs, slice(1, 2))  # it must work on ordinary input too
    for a, b, rec, what in _pair_results(evidence, inputs, "far"):
        _matches(a, b, rec, what + f" (points far from the origin, {str(a.dtype).removeprefix('torch.')})",
                 *_far_tolerance(a))


def pairwise_edges(evidence: Evidence, inputs: dict) -> None:
    pairwise_values(evidence, inputs, slice(1, 2))
    for a, b, rec, what in [*_pair_results(evidence, inputs), *_pair_results(evidence, inputs, "far"),
                            *_pair_results(evidence, inputs, "empty")]:
        result = tensor(rec["result"], what)
        expect(tuple(result.shape) == tuple(_reference(a, b).shape), f"{what}: shape {tuple(result.shape)}")
        expect(result.dtype == a.dtype, f"{what}: dtype {result.dtype}, expected {a.dtype}")
        expect(bool(torch.isfinite(result).all()) and bool((result >= 0).all()),
               f"{what}: squared distances must be finite and never negative (clamp at 0)")
        equal(rec["a_after"], a, f"{what}: a must not be modified")
        equal(rec["b_after"], b, f"{what}: b must not be modified")
    devices = value(evidence.probe("pairwise_sq_distances")["devices"], "pairwise_sq_distances on another device")
    for case, rec in zip(inputs["pairwise_sq_distances"]["devices"], devices, strict=True):
        what = (f"pairwise_sq_distances(a of shape {tuple(case['a'])}, b of shape {tuple(case['b'])}) on "
                f"{case['device']}" + (f" with {case['default']} as the default device" if case["default"] else ""))
        rec = value(rec, what)
        expect(rec["device"] == case["device"], f"{what} returned a result on {rec['device']}: keep every tensor "
                                                "on a.device (a GPU run would fail the same way)")
        expect(rec["shape"] == case["shape"], f"{what}: shape {tuple(rec['shape'])}, expected {tuple(case['shape'])}")
    for a, b, rec, what in _pair_results(evidence, inputs, "on_device"):
        what += " on a second device (meta, holding data here, stands in for a GPU)"
        rec = value(rec, what.replace("(a of", "(a on meta of"))
        expect(rec["device"] == "meta", f"{what} returned a result on {rec['device']}: keep every tensor on "
                                        "a.device, not on a device named in the code")
        tolerance = 1e-10 if a.dtype == torch.float64 else 1e-4
        _matches(a, b, rec, what, tolerance, tolerance)
        equal(rec["inputs_after"][0], a, f"{what}: a must not be modified")
        equal(rec["inputs_after"][1], b, f"{what}: b must not be modified")



def pairwise_no_cdist(evidence: Evidence, inputs: dict) -> None:
    used = uses(evidence.sources.get("pairwise_sq_distances", ""), FORBIDDEN_DISTANCE)
    expect(not used, f"pairwise_sq_distances uses {', '.join(sorted(used))}: compute the distances yourself")
    data = evidence.probe("pairwise_sq_distances")
    names = value(data["ops"], "pairwise_sq_distances")["names"]
    expect(not FORBIDDEN_DISTANCE & set(names), "pairwise_sq_distances calls cdist/pdist: compute the distances yourself")
    pairwise_values(evidence, inputs, slice(3, 4))
    (a, b), (big_a, big_b), (small_a, small_b) = inputs["pairwise_sq_distances"]["memory"]
    largest, big, small = (value(n, f"pairwise_sq_distances on {x.shape[0]} x 64 points")
                           for n, x in zip(data["largest_tensor"], (a, big_a, small_a), strict=True))
    temporary = a.shape[0] * b.shape[0] * a.shape[1] * a.element_size()
    expect(type(largest) is int and largest < temporary / 4,
           f"pairwise_sq_distances(384 x 64, 384 x 64) created a {largest / 2**20:.1f} MiB tensor for a 0.6 MiB "
           f"result (the whole m x n x d difference is {temporary / 2**20:.0f} MiB): use the matmul identity, "
           "or a loop over chunks")
    # Doubling m and n doubles a fixed-size chunk (c x n x d or m x c x d) and quadruples the result, which is
    # d times smaller than m x n x d; a fixed NUMBER of chunks grows like m x n x d itself.
    result = big_a.shape[0] * big_b.shape[0] * big_a.element_size()
    expect(type(big) is int and big <= max(3 * largest, 4 * result),
           f"pairwise_sq_distances(768 x 64, 768 x 64) created a {big / 2**20:.1f} MiB tensor, "
           f"{big / max(largest, 1):.1f} times the largest at 384 x 64, for a {result / 2**20:.1f} MiB result: a "
           "temporary still grows with m * n * d. Loop over chunks of a fixed size (a fixed number of chunks grows "
           "with the input)")
    # From m = n = 128 on, each chunk is at most a quarter of the whole: 32 rows of 128 are, 64 rows are not.
    whole = small_a.shape[0] * small_b.shape[0] * small_a.shape[1] * small_a.element_size()
    expect(type(small) is int and small <= whole / 4,
           f"pairwise_sq_distances(128 x 64, 128 x 64) created a {small / 2**20:.2f} MiB tensor, more than a quarter "
           f"of the whole m x n x d difference ({whole / 2**20:.0f} MiB): from m = n = 128 on, each chunk must be at "
           "most a quarter of it (smaller chunks, or the matmul identity)")


CHECKS = AssignmentChecks(
    inputs=inputs,
    tests={
        "test_one_hot_values": one_hot_values,
        "test_one_hot_range": one_hot_range,
        "test_one_hot_no_builtin": one_hot_scatter,
        "test_pairwise_sq_distances_values": pairwise_values,
        "test_pairwise_sq_distances_far": pairwise_far,
        "test_pairwise_sq_distances_edges": pairwise_edges,
        "test_pairwise_sq_distances_no_cdist": pairwise_no_cdist,
    },
)
