"""Checks for 05_memory: release (T071) and checkpoint_segments (T074).

release's clauses (Exercise 1) and where each is checked; the counters come from a simulated CUDA
allocator (utils.simulated_cuda), the rest from the namespaces and weakrefs the probe hands in:
  1 a missing name raises KeyError naming it, before anything is deleted .................... release_missing
  2 the listed names go, and nothing else; their objects are left unchanged (aliases keep them),
    in a dict and in globals() ................................................................ release_names
  3 objects in reference cycles are freed: gc.collect(), every generation (an old cycle) .... release_cycles,
    and on the simulated GPU the cycle's memory is freed before the cache is emptied ....... release_workflow
  4 with CUDA available, empty_cache() once everything is freed ............................. release_workflow
  5 returns a dict of exactly the four keys, int bytes: memory_allocated/reserved read before the
    deletion and after the cache was emptied (from the counters, not written into them) .... release_workflow
    and all four 0 without CUDA ................................................................ release_report
  release_report, release_missing and release_workflow also need clause 2 (an answer that releases nothing
  earns nothing there).
checkpoint_segments's clauses (Exercise 2), on seven logged blocks, segment sizes 1, 2, 3, 7 and 12, in a
list, an nn.Sequential and an nn.ModuleList, with and without an x that requires grad:
  1 segment_size < 1 raises ValueError (0 and -2) ........................................ checkpoint_matches
  2 the output and the gradients (every parameter, and x when it requires grad) equal the plain loop's,
    also when x does not require grad ............................................ every test (through _cases)
    and when the blocks draw random numbers: blocks ending in Dropout(0.5), a seed set before the call,
    gradients equal to the plain loop's from the same seed (checkpoint must replay the random state) . matches
  3 the forward pass runs each block once, in order; the backward pass recomputes each segment once, as
    a unit, the last segment first (the blocks log every run) ........................ checkpoint_recomputes
  4 outside the checkpoints autograd keeps one tensor per segment, its input: the tensors an outer
    saved-tensor hook sees, and the memory the call holds between forward and backward, read from
    malloc's own count (mallinfo2), which no hook can change: at most one activation per segment plus
    checkpoint's bookkeeping (a plain loop holds about 16 activations, hidden or not) ........ checkpoint_saves
  5 each segment goes through torch.utils.checkpoint.checkpoint, not checkpoint_sequential: no call of
    checkpoint_sequential's code (traced, under any name, on any thread) and no use of its name; and the
    recomputation is checkpoint's own: the autograd engine called torch.utils.checkpoint's code (its
    code objects, bound before the answer runs) while running a node of that segment, after the later
    segments' weights got their gradients and before this segment's did (a hook that replays segments
    fails both) ............................................................................ checkpoint_recomputes
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from grader.checking import AssignmentChecks, Evidence, close, expect, probe_definitions, uses, value

KEYS = ["allocated_after", "allocated_before", "reserved_after", "reserved_before"]
MIB = 2**20
# The simulated GPU when release(ns, "model", "trainer") is called: live tensors in "model",
# "keep" and a reference cycle in "trainer", plus cached free blocks. Sizes differ from the
# notebook's visible test, and every mistake in the workflow gives different numbers.
WORKFLOW = {"model": 5 * MIB, "keep": 1 * MIB, "cycle": 3 * MIB, "cached": 7 * MIB}


# checkpoint_segments: seven blocks, every segment size the spec names (1, 2, 3, n, n + 5), each in
# another container, with and without an input that requires grad. The batch is wide enough (one
# activation: 2048 x 8 floats, 64 KiB) for the memory held between forward and backward to tell one
# tensor per segment from every activation of the plain loop (about 3.5 per block).
BLOCKS = 7
ROWS = 2048
SEGMENT_CASES = [(1, "list", False), (2, "Sequential", True), (3, "ModuleList", False), (3, "list", True),
                 (BLOCKS, "list", False), (BLOCKS + 5, "Sequential", True)]
# Blocks ending in Dropout(0.5): size, container, x requires grad, the seed set before the call.
RANDOM_CASES = [(2, "list", False, 11), (3, "Sequential", True, 12)]
DROPOUT = 0.5
INVALID_SIZES = [0, -2]
# What checkpoint itself keeps per segment besides the segment's input (the CPU generator's state,
# 5 KiB, and its records), and what the call may allocate once (a copy of x, say).
PER_SEGMENT_SLACK = 12 * 2**10
ONCE_SLACK = ROWS * 8 * 4 + 32 * 2**10


def inputs() -> dict:
    torch.manual_seed(505)
    states = [{k: v.clone() for k, v in nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.Tanh()).state_dict().items()}
              for _ in range(BLOCKS)]
    return {"release": {"workflow": dict(WORKFLOW)},
            "checkpoint_segments": {"states": states, "x": torch.randn(ROWS, 8), "dropout": DROPOUT,
                                    "cases": [list(c) for c in SEGMENT_CASES],
                                    "random": [list(c) for c in RANDOM_CASES], "invalid": list(INVALID_SIZES)}}


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


def _reference(inputs: dict, size: int, requires_grad: bool, seed: int | None = None):
    """The plain loop on the grader's side: output, gradients, and the input of every segment; with
    a seed, on blocks that end in dropout, the seed set before the loop (the grader's own random
    state is left as it was)."""
    spec = inputs["checkpoint_segments"]
    blocks = probe_definitions(Path(__file__).parent)["_logged_blocks"](spec["states"], [],
                                                          dropout=spec["dropout"] if seed is not None else 0.0)
    params = [p for b in blocks for p in b.parameters()]
    x = spec["x"].clone().requires_grad_(requires_grad)
    h, boundaries = x, []
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        for index, block in enumerate(blocks):
            if index % size == 0:
                boundaries.append(h.detach().clone())
            h = block(h)
    grads = torch.autograd.grad(h.square().sum(), ([x] if requires_grad else []) + params)
    return h.detach(), grads, boundaries


def _same(rec: dict, out, grads, what: str, gradients: str = "the gradients differ from the plain loop's") -> None:
    close(rec["out"], out, f"{what}: the output differs from running the blocks in order")
    expect(rec["requires_grad"] is True, f"{what}: the output does not require grad, so no gradient reaches the "
           "parameters (use checkpoint(..., use_reentrant=False), and do not detach the result)")
    expect(len(rec["grads"]) == len(grads), f"{what}: gradients are missing")
    for got, want in zip(rec["grads"], grads):
        close(got, want, f"{what}: {gradients}", atol=1e-5)


def _cases(evidence: Evidence, inputs: dict):
    """(size, description, record, segment inputs) for every case, once its output and gradients
    match the plain loop's (so no other check can pass an answer that computes the wrong thing)."""
    results = evidence.probe("checkpoint_segments")["cases"]
    for (size, container, requires_grad), rec in zip(inputs["checkpoint_segments"]["cases"], results, strict=True):
        what = (f"checkpoint_segments on {BLOCKS} blocks in a {container}, segment_size={size}, "
                f"{'x requiring grad' if requires_grad else 'a data batch (no grad)'}")
        rec = value(rec, what)
        out, grads, boundaries = _reference(inputs, size, requires_grad)
        _same(rec, out, grads, what)
        yield size, what, rec, boundaries


def checkpoint_matches(evidence: Evidence, inputs: dict) -> None:
    for _ in _cases(evidence, inputs):
        pass
    spec = inputs["checkpoint_segments"]
    for (size, container, requires_grad, seed), rec in zip(spec["random"], evidence.probe("checkpoint_segments")["random"],
                                                          strict=True):
        what = (f"checkpoint_segments on {BLOCKS} blocks ending in Dropout({spec['dropout']:g}), in a {container}, "
                f"segment_size={size}, {'x requiring grad' if requires_grad else 'a data batch (no grad)'}, "
                f"torch.manual_seed({seed}) set before the call")
        rec = value(rec, what)
        out, grads, _ = _reference(inputs, size, requires_grad, seed)
        _same(rec, out, grads, what, "the gradients differ from the plain loop's: the recomputation drew other "
              "random numbers than the forward pass (dropout masks); checkpoint replays them when it keeps the "
              "random state (preserve_rng_state=True, its default)")
    for size, rec in zip(INVALID_SIZES, evidence.probe("checkpoint_segments")["invalid"], strict=True):
        rec = value(rec, f"checkpoint_segments(blocks, x, {size})")
        expect(rec["raised"] is not None, f"checkpoint_segments(blocks, x, {size}) should raise ValueError")
        expect(rec["is_value_error"] is True,
               f"checkpoint_segments(blocks, x, {size}) raised {rec['raised']}, expected a ValueError")


def checkpoint_recomputes(evidence: Evidence, inputs: dict) -> None:
    """Each segment is one checkpoint: the forward runs every block once, the backward recomputes
    each segment once, last segment first. The grouping decides the order. Who recomputes, and
    when: the autograd engine calls checkpoint's own code, while it runs a node of that segment
    (after the later segments' weights got their gradients, before this segment's do)."""
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
        _recomputed_by_checkpoint(what, segments, rec["events"])


def _recomputed_by_checkpoint(what: str, segments: list[list[int]], events: list) -> None:
    runs = [(i, e) for i, e in enumerate(events) if e[0] == "run"]
    grads = {e[1]: i for i, e in enumerate(events) if e[0] == "grad"}
    expect(sorted(grads) == list(range(BLOCKS)), f"{what}: the backward pass did not reach every block's weight "
           "through the autograd graph")
    for _, (_, block, node, via) in runs:
        expect(via == "checkpoint", f"{what}: block {block} was recomputed by {via!r}"
               + (f" (while autograd ran {node})" if node else "") + ", not by torch.utils.checkpoint: each "
               "segment must go through checkpoint, which recomputes it when the backward pass needs it")
    for k, segment in enumerate(segments):
        at = [i for i, e in runs if e[1] in segment]
        later = [grads[b] for s in segments[k + 1:] for b in s]
        expect(not later or min(at) > max(later), f"{what}: segment {segment} was recomputed before the backward "
               "pass had gone through the later segments (their weights had no gradients yet): it ran from a "
               "hook, not when autograd reached the segment")
        expect(max(at) < min(grads[b] for b in segment), f"{what}: segment {segment} was recomputed after its "
               "weights got their gradients: those gradients did not come from the recomputation")


def _recompute_hint(got: list) -> str:
    if not got:
        return "no block was recomputed: each segment must run inside checkpoint(..., use_reentrant=False)"
    if got == list(range(BLOCKS - 1, -1, -1)):
        return "every block was recomputed on its own: one checkpoint per block, not per segment"
    if got == list(range(BLOCKS)):
        return "the whole chain was recomputed as one unit: one checkpoint around everything"
    return "each segment once, as a unit, the last segment first"


def checkpoint_saves(evidence: Evidence, inputs: dict) -> None:
    """Outside the checkpoints autograd keeps exactly one activation per segment: its input. The
    tensors autograd's own hooks see, and the memory the call actually leaves held (malloc's count,
    which no hook changes) until the backward pass."""
    activation = ROWS * 8 * 4
    for size, what, rec, boundaries in _cases(evidence, inputs):
        saved = rec["saved"]
        expect(len(saved) == len(boundaries),
               f"{what}: autograd kept {len(saved)} activation(s) for the backward pass, expected {len(boundaries)}: "
               f"only the input of each segment {_segments(size)} (checkpoint every segment, the last one included)")
        for index, (got, want) in enumerate(zip(saved, boundaries)):
            close(got, want, f"{what}: activation {index} kept for backward is not the input of segment {index}")
        held = rec["held"]
        expect(type(held) is int, f"{what}: the grader could not measure the memory the call held")
        limit = len(boundaries) * (activation + PER_SEGMENT_SLACK) + ONCE_SLACK
        expect(held <= limit, f"{what}: between the forward and the backward pass the call held "
               f"{held / 2**10:.0f} KiB, about {held / activation:.1f} activations of {activation // 2**10} KiB; "
               f"one per segment ({len(boundaries)}) is about {len(boundaries) * activation / 2**10:.0f} KiB. The "
               "other activations were kept somewhere: checkpoint frees them and recomputes them in the backward pass")


CHECKS = AssignmentChecks(
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
