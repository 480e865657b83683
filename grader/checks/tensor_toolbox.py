"""Checks for 02_tensor_toolbox: one_hot (T026) and pairwise_sq_distances (T030)."""
from __future__ import annotations

import torch

from . import AssignmentChecks, Evidence, close, equal, expect, tensor, uses, value

INVALID = [([0, 3, 1], 3), ([-1, 0], 3), ([0, 1, 7], 4), ([-5], 2), ([2, 9, 0, 1], 9)]
PAIR_SHAPES = [((5, 4), (3, 4)), ((1, 2), (7, 2)), ((40, 16), (25, 16)), ((64, 8), (48, 8))]
FORBIDDEN_DISTANCE = {"cdist", "pdist", "pairwise_distance", "_cdist_forward", "_euclidean_dist"}


def inputs() -> dict:
    g = torch.Generator().manual_seed(202)
    t = lambda values: torch.tensor(values, dtype=torch.int64)  # noqa: E731
    valid = [(t([2, 0, 1, 2]), 3), (t([4, 4, 0]), 6), (torch.randint(0, 10, (1000,), generator=g), 10),
             (t([]), 5), (t([0, 0, 0]), 1), (t([0, 2]), 3), (torch.randint(0, 37, (300,), generator=g), 37)]
    scaling = [(torch.randint(0, 7, (10,), generator=g), 7), (torch.randint(0, 7, (3000,), generator=g), 7)]
    cases = [(torch.tensor([[0.0, 0.0], [1.0, 1.0]]), torch.tensor([[3.0, 4.0]]))]
    cases += [(torch.randn(*sa, generator=g), torch.randn(*sb, generator=g)) for sa, sb in PAIR_SHAPES]
    cases += [(torch.randn(6, 3, generator=g, dtype=torch.float64), torch.randn(4, 3, generator=g, dtype=torch.float64))]
    near = torch.randn(32, 8, generator=g) * 0.01 + 100.0
    cases += [(near, near.clone()), (torch.randn(0, 5), torch.randn(4, 5)), (torch.randn(3, 5), torch.randn(0, 5)),
              (torch.randn(0, 5), torch.randn(0, 5))]
    return {"one_hot": {"valid": valid, "invalid": [(t(v), c) for v, c in INVALID], "ops_case": (t([1, 0, 2]), 3),
                        "scaling": scaling},
            "pairwise_sq_distances": {"cases": cases}}


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
        expect(rec["is_value_error"] is True, f"{what} raised {rec['raised']}, expected a ValueError")
        expect(bool(str(rec["message"]).strip()), f"{what}: give the ValueError a message")


def one_hot_scatter(evidence: Evidence, inputs: dict) -> None:
    _one_hot_works(evidence, inputs)
    used = uses(evidence.sources.get("one_hot", ""), {"one_hot"})
    expect(not used, "one_hot uses F.one_hot: build the encoding with scatter_ or scatter")
    data = evidence.probe("one_hot")
    names = value(data["ops"], "one_hot([1, 0, 2], 3)")["names"]
    expect("one_hot" not in names, "one_hot calls torch.nn.functional.one_hot: build it with scatter_ or scatter")
    expect(any(n.startswith("scatter") for n in names), "one_hot does not call scatter_ or scatter")
    small, large = (value(s["lines"], "one_hot line count") for s in data["scaling"])
    small_ops, large_ops = (value(s["ops"], "one_hot op count")["count"] for s in data["scaling"])
    expect(large <= small + 10 and large_ops <= small_ops + 10,
           "one_hot does work for every label in Python (a loop or comprehension): vectorise it with scatter_")


# ---- pairwise_sq_distances -------------------------------------------------------------------

def _pair_results(evidence: Evidence, inputs: dict):
    cases = inputs["pairwise_sq_distances"]["cases"]
    results = evidence.probe("pairwise_sq_distances")["cases"]
    for (a, b), rec in zip(cases, results, strict=True):
        what = f"pairwise_sq_distances(a of shape {tuple(a.shape)}, b of shape {tuple(b.shape)})"
        yield a, b, value(rec, what), what


def _reference(a, b):
    return ((a.double()[:, None, :] - b.double()[None, :, :]) ** 2).sum(-1)


def pairwise_values(evidence: Evidence, inputs: dict, cases: slice = slice(0, 6)) -> None:
    for a, b, rec, what in list(_pair_results(evidence, inputs))[cases]:
        expected = _reference(a, b)
        result = tensor(rec["result"], what)
        expect(result.dtype == a.dtype, f"{what}: dtype {result.dtype}, expected {a.dtype}")
        tolerance = 1e-10 if a.dtype == torch.float64 else 1e-4
        close(result.double(), expected, what, rtol=tolerance, atol=tolerance)


def pairwise_edges(evidence: Evidence, inputs: dict) -> None:
    pairwise_values(evidence, inputs, slice(1, 2))  # it must work on ordinary input too
    for a, b, rec, what in _pair_results(evidence, inputs):
        result = tensor(rec["result"], what)
        expect(tuple(result.shape) == (a.shape[0], b.shape[0]), f"{what}: shape {tuple(result.shape)}")
        expect(result.dtype == a.dtype, f"{what}: dtype {result.dtype}, expected {a.dtype}")
        expect(bool(torch.isfinite(result).all()) and bool((result >= 0).all()),
               f"{what}: squared distances must be finite and never negative (clamp at 0)")
        equal(rec["a_after"], a, f"{what}: a must not be modified")
        equal(rec["b_after"], b, f"{what}: b must not be modified")


def pairwise_no_cdist(evidence: Evidence, inputs: dict) -> None:
    used = uses(evidence.sources.get("pairwise_sq_distances", ""), FORBIDDEN_DISTANCE)
    expect(not used, f"pairwise_sq_distances uses {', '.join(sorted(used))}: compute the distances yourself")
    names = value(evidence.probe("pairwise_sq_distances")["ops"], "pairwise_sq_distances")["names"]
    expect(not FORBIDDEN_DISTANCE & set(names), "pairwise_sq_distances calls cdist/pdist: compute the distances yourself")
    a, b = inputs["pairwise_sq_distances"]["cases"][3]
    close(tensor(evidence.probe("pairwise_sq_distances")["cases"][3]["result"], "result").double(), _reference(a, b),
          "pairwise_sq_distances", rtol=1e-4, atol=1e-4)


CHECKS = AssignmentChecks(
    assignment="02_tensor_toolbox",
    probe_module="tensor_toolbox",
    inputs=inputs,
    tests={
        "test_one_hot_values": one_hot_values,
        "test_one_hot_range": one_hot_range,
        "test_one_hot_no_builtin": one_hot_scatter,
        "test_pairwise_sq_distances_values": pairwise_values,
        "test_pairwise_sq_distances_edges": pairwise_edges,
        "test_pairwise_sq_distances_no_cdist": pairwise_no_cdist,
    },
)
