"""Checks for 05_memory: release (T071) and checkpointed_forward (T074)."""
from __future__ import annotations

import torch
from torch import nn

from . import AssignmentChecks, Evidence, close, expect, probe_definitions, value

KEYS = ["allocated_after", "allocated_before", "reserved_after", "reserved_before"]
MIB = 2**20
# The simulated GPU when release(ns, "model", "trainer") is called: live tensors in "model",
# "keep" and a reference cycle in "trainer", plus cached free blocks. Sizes differ from the
# notebook's visible test, and every mistake in the workflow gives different numbers.
WORKFLOW = {"model": 5 * MIB, "keep": 1 * MIB, "cycle": 3 * MIB, "cached": 7 * MIB}


def inputs() -> dict:
    torch.manual_seed(505)
    states = [{k: v.clone() for k, v in nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.Tanh()).state_dict().items()}
              for _ in range(4)]
    return {"release": {"workflow": dict(WORKFLOW)}, "checkpointed_forward": {"states": states, "x": torch.randn(5, 8)}}


def _release(evidence: Evidence, part: str):
    return value(evidence.probe("release")[part], f"release ({part})")


def release_report(evidence: Evidence, inputs: dict) -> None:
    release_names(evidence, inputs)  # a report from a release that releases nothing earns nothing
    rec = _release(evidence, "report")
    expect(rec["type"] == "dict", f"release should return a dict, got {rec['type']}")
    expect(rec["keys"] == KEYS, f"expected exactly the keys {KEYS}, got {rec['keys']}")
    expect(all(type(v) is int for v in rec["values"].values()), f"all four values should be ints, got {rec['values']}")
    expect(all(v == 0 for v in rec["values"].values()), f"without CUDA all four values should be 0, got {rec['values']}")


def release_names(evidence: Evidence, inputs: dict) -> None:
    rec = _release(evidence, "names")
    expect(rec["left"] == ["keep", "n"], f"after release(ns, 'x', 'y') the namespace holds {rec['left']}, "
           "expected ['keep', 'n']")
    expect(rec["keep_same"] is True and rec["n"] == 5, "names that were not listed must keep their objects")
    expect(rec["globals_removed"] is True and rec["globals_kept"] is True,
           "release(globals(), name) must remove that global and no other")


def release_cycles(evidence: Evidence, inputs: dict) -> None:
    rec = _release(evidence, "cycles")
    expect(rec["dead"] == [True, True, True],
           "an object caught in a reference cycle is still alive after release(): collect the garbage")
    expect(rec["left"] == ["other"], f"the namespace should keep only 'other', it holds {rec['left']}")


def release_missing(evidence: Evidence, inputs: dict) -> None:
    release_names(evidence, inputs)  # raising KeyError for everything earns nothing
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
    release_names(evidence, inputs)
    rec = _release(evidence, "workflow")
    sizes = inputs["release"]["workflow"]
    expect(rec["left"] == ["keep", "steps"], f"after release(ns, 'model', 'trainer') the namespace holds {rec['left']}")
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


def _reference(inputs: dict, x: torch.Tensor, requires_grad: bool):
    blocks = probe_definitions("memory")["_blocks"](inputs["checkpointed_forward"]["states"])
    params = [p for b in blocks for p in b.parameters()]
    x = x.clone().requires_grad_(requires_grad)
    out = x
    for block in blocks:
        out = block(out)
    grads = torch.autograd.grad(out.square().sum(), ([x] if requires_grad else []) + params)
    return out.detach(), grads


def checkpoint_matches(evidence: Evidence, inputs: dict) -> None:
    data = evidence.probe("checkpointed_forward")
    x = inputs["checkpointed_forward"]["x"]
    rec = value(data["with_grad"], "checkpointed_forward(blocks, x) with x requiring grad")
    out, grads = _reference(inputs, x, True)
    close(rec["out"], out, "checkpointed_forward: the output differs from running the blocks in order")
    expect(len(rec["grads"]) == len(grads), "checkpointed_forward: gradients are missing")
    for got, want in zip(rec["grads"], grads):
        close(got, want, "checkpointed_forward: the gradients differ from the plain forward", atol=1e-5)
    rec = value(data["data_input"], "checkpointed_forward on an input that does not require grad")
    expect(rec["requires_grad"] is True, "with an input that does not require grad the output must still depend on "
           "the parameters (use_reentrant=False)")
    out, grads = _reference(inputs, x, False)
    close(rec["out"], out, "checkpointed_forward on a data batch: the output")
    for got, want in zip(rec["grads"], grads, strict=True):
        close(got, want, "checkpointed_forward on a data batch: the parameter gradients", atol=1e-5)


def checkpoint_recomputes(evidence: Evidence, inputs: dict) -> None:
    rec = value(evidence.probe("checkpointed_forward")["order"], "checkpointed_forward with logging blocks")
    expect(rec["log"][:4] == [0, 1, 2, 3], f"the forward pass should call each block once, in order; calls: {rec['log']}")
    expect(rec["log"][4:] == [3, 2, 1, 0], f"during backward the blocks were recomputed as {rec['log'][4:]}, "
           "expected [3, 2, 1, 0]: wrap every block in its own checkpoint call")
    expect(rec["all_grads"] is True, "every parameter should receive a gradient")


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
        "test_checkpointed_forward_matches": checkpoint_matches,
        "test_checkpointed_forward_recomputes": checkpoint_recomputes,
    },
)
