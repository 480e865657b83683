"""Checks for 05_memory: release (T071) and checkpoint_segments (T074)."""
from __future__ import annotations

import torch
from torch import nn

from . import AssignmentChecks, Evidence, close, expect, probe_definitions, uses, value

KEYS = ["allocated_after", "allocated_before", "reserved_after", "reserved_before"]
MIB = 2**20
# The simulated GPU when release(ns, "model", "trainer") is called: live tensors in "model",
# "keep" and a reference cycle in "trainer", plus cached free blocks. Sizes differ from the
# notebook's visible test, and every mistake in the workflow gives different numbers.
WORKFLOW = {"model": 5 * MIB, "keep": 1 * MIB, "cycle": 3 * MIB, "cached": 7 * MIB}


# checkpoint_segments: seven blocks, every segment size the spec names (1, 2, 3, n, n + 5), each in
# another container, with and without an input that requires grad.
BLOCKS = 7
SEGMENT_CASES = [(1, "list", False), (2, "Sequential", True), (3, "ModuleList", False), (3, "list", True),
                 (BLOCKS, "list", False), (BLOCKS + 5, "Sequential", True)]
INVALID_SIZES = [0, -2]


def inputs() -> dict:
    torch.manual_seed(505)
    states = [{k: v.clone() for k, v in nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.Tanh()).state_dict().items()}
              for _ in range(BLOCKS)]
    return {"release": {"workflow": dict(WORKFLOW)},
            "checkpoint_segments": {"states": states, "x": torch.randn(5, 8),
                                    "cases": [list(c) for c in SEGMENT_CASES], "invalid": list(INVALID_SIZES)}}


def _release(evidence: Evidence, part: str):
    return value(evidence.probe("release")[part], f"release ({part})")


def release_report(evidence: Evidence, inputs: dict) -> None:
    _releases(evidence)  # a report from a release that releases nothing earns nothing
    rec = _release(evidence, "report")
    expect(rec["type"] == "dict", f"release should return a dict, got {rec['type']}")
    expect(rec["keys"] == KEYS, f"expected exactly the keys {KEYS}, got {rec['keys']}")
    expect(all(type(v) is int for v in rec["values"].values()), f"all four values should be ints, got {rec['values']}")
    # The probe runs release() as on a machine without CUDA (utils.simulated_cuda.without_cuda), whatever
    # machine grades: the same answer earns the same marks with a GPU or without.
    expect(all(v == 0 for v in rec["values"].values()), "without CUDA all four values should be 0 (the grader runs "
           f"this test as on a machine without a GPU), got {rec['values']}")


def _releases(evidence: Evidence) -> None:
    """The listed names go and the others stay: what the other tests need before they count."""
    left = _release(evidence, "names")["left"]
    expect(not {"x", "y", "model"} & set(left) and {"keep", "n"} <= set(left),
           f"after release(ns, 'x', 'y', 'model') the namespace holds {left}")


def release_names(evidence: Evidence, inputs: dict) -> None:
    rec = _release(evidence, "names")
    expected = ["keep", "model_too", "n", "x_too"]
    expect(rec["left"] == expected, f"after release(ns, 'x', 'y', 'model') the namespace holds {rec['left']}, "
           f"expected {expected} ('x_too' and 'model_too' are other names of the objects of 'x' and 'model')")
    expect(rec["keep_same"] is True and rec["n"] == 5 and rec["aliases_same"] is True,
           "names that were not listed must keep their objects, also where a listed name shared that object")
    expect(rec["objects_intact"] is True, "release() changed an object it released, which another name still "
           "holds: delete the names, and leave the objects to the garbage collector")
    expect(rec["globals_removed"] is True and rec["globals_kept"] is True,
           "release(globals(), name) must remove that global and no other")


def release_cycles(evidence: Evidence, inputs: dict) -> None:
    rec = _release(evidence, "cycles")
    partial = [g for g in rec["generations"] if g < 2]
    expect(rec["dead"] == [True, True, True],
           "an object caught in a reference cycle, old enough to have survived a collection, is still alive "
           "after release(): run gc.collect(), which collects every generation"
           + (f" (release() collected generation {partial[0]} only)" if partial else ""))
    expect(2 in rec["generations"], "release() never ran gc.collect(): the cycle went another way, which a "
           "model's real cycles would not")
    expect(rec["left"] == ["other"], f"the namespace should keep only 'other', it holds {rec['left']}")


def release_missing(evidence: Evidence, inputs: dict) -> None:
    _releases(evidence)  # raising KeyError for everything earns nothing
    rec = _release(evidence, "missing")
    expect(rec["raised"] is not None, "release(ns, 'a', 'no_such_name', 'b') should raise KeyError")
    expect(rec["is_key_error"] is True, f"a missing name raised {rec['raised']}, expected KeyError")
    expect(rec["names_it"] is True, "the KeyError should name the missing name")
    expect([list(item) for item in rec["left"]] == [["a", 1], ["b", 2]], "nothing may be deleted when a name is missing")


def _mib(n: int) -> str:
    return f"{n / MIB:g} MiB"


def release_workflow(evidence: Evidence, inputs: dict) -> None:
    """The whole workflow on a simulated CUDA allocator (utils.simulated_cuda): every step that
    is skipped, misordered or faked changes a counter the answer must report."""
    _releases(evidence)
    rec = _release(evidence, "workflow")
    sizes = inputs["release"]["workflow"]
    expect(rec["left"] == ["keep", "steps"], f"after release(ns, 'model', 'trainer') the namespace holds {rec['left']}")
    books = rec["books"]
    expect(books["counted"] == books["alive"], "the simulated GPU counts the tensors "
           f"{books['counted']}, but {books['alive']} are alive: release() wrote to the simulation instead of "
           "freeing memory")
    events = [tuple(e) for e in rec["events"]]
    freed = [i for i, (kind, label) in enumerate(events) if kind == "free" and label in ("model", "cycle")]
    emptied = [i for i, (kind, _) in enumerate(events) if kind == "empty_cache"]
    reads = [(i, kind, v) for i, (kind, v) in enumerate(events) if kind in ("memory_allocated", "memory_reserved")]
    expect(any(label == "cycle" for kind, label in events if kind == "free"),
           "the tensor held by a reference cycle was never freed: call gc.collect() after deleting the names")
    expect(len(freed) == 2, "deleting the names did not free the model's memory")
    expect(bool(emptied), "torch.cuda.empty_cache() was never called while CUDA was available")
    expect(emptied[-1] > freed[-1], "empty_cache() ran before everything was freed: delete the names and "
           "gc.collect() first, or the freed blocks stay in the cache")
    expect(any(i < freed[0] for i, kind, _ in reads if kind == "memory_allocated")
           and any(i < freed[0] for i, kind, _ in reads if kind == "memory_reserved"),
           "the counters were not read before the names were deleted")
    expect(any(i > emptied[-1] for i, kind, _ in reads if kind == "memory_allocated")
           and any(i > emptied[-1] for i, kind, _ in reads if kind == "memory_reserved"),
           "the counters were not read again after empty_cache()")
    live = sizes["model"] + sizes["cycle"] + sizes["keep"]
    expected = {"allocated_before": live, "reserved_before": live + sizes["cached"],
                "allocated_after": sizes["keep"], "reserved_after": sizes["keep"]}
    report = rec["report"]
    expect(isinstance(report, dict) and sorted(report) == KEYS,
           f"release should return a dict with the int keys {KEYS}, got {sorted(report) if report else report}")
    read_values = {v for _, _, v in reads}
    for key, want in expected.items():
        expect(report[key] == want, f"{key} = {_mib(report[key])}, but the simulated GPU's counter read "
               f"{_mib(want)} at that step of the workflow")
        expect(report[key] in read_values, f"{key} was not read from torch.cuda's counters")


def _segments(size: int) -> list[list[int]]:
    return [list(range(i, min(i + size, BLOCKS))) for i in range(0, BLOCKS, size)]


def _reference(inputs: dict, size: int, requires_grad: bool):
    """The plain loop on the grader's side: output, gradients, and the input of every segment."""
    spec = inputs["checkpoint_segments"]
    blocks = probe_definitions("memory")["_logged_blocks"](spec["states"], [])
    params = [p for b in blocks for p in b.parameters()]
    x = spec["x"].clone().requires_grad_(requires_grad)
    h, boundaries = x, []
    for index, block in enumerate(blocks):
        if index % size == 0:
            boundaries.append(h.detach().clone())
        h = block(h)
    grads = torch.autograd.grad(h.square().sum(), ([x] if requires_grad else []) + params)
    return h.detach(), grads, boundaries


def _cases(evidence: Evidence, inputs: dict):
    """(size, description, record, segment inputs) for every case, once its output and gradients
    match the plain loop's (so no other check can pass an answer that computes the wrong thing)."""
    results = evidence.probe("checkpoint_segments")["cases"]
    for (size, container, requires_grad), rec in zip(inputs["checkpoint_segments"]["cases"], results, strict=True):
        what = (f"checkpoint_segments on {BLOCKS} blocks in a {container}, segment_size={size}, "
                f"{'x requiring grad' if requires_grad else 'a data batch (no grad)'}")
        rec = value(rec, what)
        out, grads, boundaries = _reference(inputs, size, requires_grad)
        close(rec["out"], out, f"{what}: the output differs from running the blocks in order")
        expect(rec["requires_grad"] is True, f"{what}: the output does not require grad, so no gradient reaches the "
               "parameters (use checkpoint(..., use_reentrant=False), and do not detach the result)")
        expect(len(rec["grads"]) == len(grads), f"{what}: gradients are missing")
        for got, want in zip(rec["grads"], grads):
            close(got, want, f"{what}: the gradients differ from the plain loop's", atol=1e-5)
        yield size, what, rec, boundaries


def checkpoint_matches(evidence: Evidence, inputs: dict) -> None:
    for _ in _cases(evidence, inputs):
        pass
    for size, rec in zip(INVALID_SIZES, evidence.probe("checkpoint_segments")["invalid"], strict=True):
        rec = value(rec, f"checkpoint_segments(blocks, x, {size})")
        expect(rec["raised"] is not None, f"checkpoint_segments(blocks, x, {size}) should raise ValueError")
        expect(rec["is_value_error"] is True,
               f"checkpoint_segments(blocks, x, {size}) raised {rec['raised']}, expected a ValueError")


def checkpoint_recomputes(evidence: Evidence, inputs: dict) -> None:
    """Each segment is one checkpoint: the forward runs every block once, the backward recomputes
    each segment once, last segment first. The grouping decides the order."""
    expect(not uses(evidence.sources.get("checkpoint_segments", ""), {"checkpoint_sequential"}, bare=True),
           "checkpoint_segments uses checkpoint_sequential: group the blocks and call checkpoint on each segment")
    for size, what, rec, _ in _cases(evidence, inputs):
        expect(rec["sequential"] is not None, f"{what}: the answer switched off Python's call profiling "
               "(sys.setprofile), so the grader cannot tell how it checkpoints")
        expect(rec["sequential"] is False, f"{what}: checkpoint_sequential was called; group the blocks and call "
               "checkpoint on each segment yourself")
        expect(rec["forward_log"] == list(range(BLOCKS)),
               f"{what}: the forward pass should run each block once, in order; it ran {rec['forward_log']}")
        segments = _segments(size)
        want = [b for segment in reversed(segments) for b in segment]
        got = rec["backward_log"]
        expect(got == want, f"{what}: the backward pass recomputed the blocks {got}; with segments {segments} "
               f"it should recompute {want} ({_recompute_hint(got)})")


def _recompute_hint(got: list) -> str:
    if not got:
        return "no block was recomputed: each segment must run inside checkpoint(..., use_reentrant=False)"
    if got == list(range(BLOCKS - 1, -1, -1)):
        return "every block was recomputed on its own: one checkpoint per block, not per segment"
    if got == list(range(BLOCKS)):
        return "the whole chain was recomputed as one unit: one checkpoint around everything"
    return "each segment once, as a unit, the last segment first"


def checkpoint_saves(evidence: Evidence, inputs: dict) -> None:
    """Outside the checkpoints autograd keeps exactly one activation per segment: its input."""
    for size, what, rec, boundaries in _cases(evidence, inputs):
        saved = rec["saved"]
        expect(len(saved) == len(boundaries),
               f"{what}: autograd kept {len(saved)} activation(s) for the backward pass, expected {len(boundaries)}: "
               f"only the input of each segment {_segments(size)} (checkpoint every segment, the last one included)")
        for index, (got, want) in enumerate(zip(saved, boundaries)):
            close(got, want, f"{what}: activation {index} kept for backward is not the input of segment {index}")


CHECKS = AssignmentChecks(
    assignment="05_memory",
    probe_module="memory",
    inputs=inputs,
    tests={
        "test_release_report": release_report,
        "test_release_workflow": release_workflow,
        "test_release_names": release_names,
        "test_release_cycles": release_cycles,
        "test_release_missing": release_missing,
        "test_checkpoint_segments_matches": checkpoint_matches,
        "test_checkpoint_segments_recomputes": checkpoint_recomputes,
        "test_checkpoint_segments_saves": checkpoint_saves,
    },
)
