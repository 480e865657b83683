"""Checks for 08_compile_fuse: soft_clip_rows (graph breaks, T093) and compile_for_batches (dynamic shapes, T093)."""
from __future__ import annotations

import torch

from . import AssignmentChecks, Evidence, Fail, close, expect, probe_definitions, uses, value

FEATURES = 24
SHAPES = [(6, 19), (6, 40), (4, 27), (6, 11), (2, 50)]   # (batch, length): batch != length in every call
# Names an answer to exercise 1 has no reason to touch: they would reach into Dynamo itself (and could
# tamper with the explain() the probe runs).
DYNAMO_NAMES = {"_dynamo", "compiler", "explain", "disable", "allow_in_graph", "set_stance"}


def inputs() -> dict:
    generator = torch.Generator().manual_seed(808)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=generator, dtype=dtype)

    cases = [
        {"x": randn(7, 13) * 3, "limit": 2.5},                                   # the ordinary case (gates the graph check)
        {"x": randn(4, 9), "limit": 100.0},                                     # nothing to clip
        {"x": torch.cat([torch.zeros(2, 6), randn(3, 6) * 4]), "limit": 1.5},   # rows of zeros
        {"x": torch.tensor([[2.0, -1.0, 0.5], [-3.0, 1.0, 2.0], [0.25, -0.5, 0.0]]), "limit": 2.0},  # at the limit, negative peak
        {"x": randn(5, 6, dtype=torch.float64) * 2, "limit": 0.7},              # float64
        {"x": randn(1, 8) * 10, "limit": 3.0},                                  # a single row
    ]
    tokens, masks = [], []
    for batch, length in SHAPES:
        mask = torch.rand(batch, length, generator=generator) > 0.4
        mask[:, 0] = True
        tokens.append(randn(batch, length, FEATURES))
        masks.append(mask)
    return {"soft_clip_rows": {"cases": cases, "explain": {"x": randn(6, 10) * 3, "limit": 2.0}},
            "compile_for_batches": {"tokens": tokens, "masks": masks}}


def _soft_clip_reference(x: torch.Tensor, limit: float) -> torch.Tensor:
    rows = []
    for row in x:
        peak = row.abs().max().item()
        rows.append(row * (limit / peak) if peak > limit else row)
    return torch.stack(rows)


def _case(evidence: Evidence, inputs: dict, index: int, unchanged: bool = True) -> None:
    case = inputs["soft_clip_rows"]["cases"][index]
    cases = value(evidence.probe("soft_clip_rows"), "soft_clip_rows")["cases"]
    expect(isinstance(cases, list) and len(cases) == len(inputs["soft_clip_rows"]["cases"]),
           "soft_clip_rows: the grader received no results")
    rec = value(cases[index], f"soft_clip_rows on a {tuple(case['x'].shape)} {case['x'].dtype} input")
    close(rec["out"], _soft_clip_reference(case["x"], case["limit"]),
          f"soft_clip_rows(x, {case['limit']}) for x of shape {tuple(case['x'].shape)} and dtype {case['x'].dtype}",
          rtol=1e-5, atol=1e-6)
    if unchanged:
        expect(rec["unchanged"] is True, "soft_clip_rows must not modify its input")


def soft_clip_values(evidence: Evidence, inputs: dict) -> None:
    for index in range(len(inputs["soft_clip_rows"]["cases"])):
        _case(evidence, inputs, index)


def soft_clip_one_graph(evidence: Evidence, inputs: dict) -> None:
    try:
        _case(evidence, inputs, 0, unchanged=False)   # one graph counts only for a function that clips correctly
    except Fail as failure:
        raise Fail(f"one graph counts only for a function that returns the right values: {failure}") from None
    touched = uses(evidence.sources.get("soft_clip_rows", ""), DYNAMO_NAMES)
    expect(not touched, f"write a plain function: the answer should not use {sorted(touched)}")
    data = value(evidence.probe("soft_clip_rows"), "soft_clip_rows")
    rec = value(data["explain"], "torch._dynamo.explain(soft_clip_rows)")
    graphs, reasons = rec["graphs"], rec["reason_count"]
    expect(type(graphs) is int and type(reasons) is int, "explain's report could not be read")
    if graphs == 0:
        raise Fail("torch._dynamo.explain found no graph: Dynamo skipped the function (a graph break inside a "
                   "loop does that)")
    expect(graphs == 1 and reasons == 0 and rec["breaks"] == 0,
           f"torch._dynamo.explain found {graphs} graph(s) and {reasons} graph break(s), expected 1 and none"
           + (f"; first reason: {rec['reasons'][0]}" if rec.get("reasons") else ""))
    full = value(data["fullgraph"], "torch.compile(soft_clip_rows, fullgraph=True)")
    expect(full["unsupported"] is None,
           f"torch.compile(soft_clip_rows, fullgraph=True) found a graph break: {full['unsupported']}")
    expect(full["graphs"] == 1, f"torch.compile(soft_clip_rows, fullgraph=True) compiled {full['graphs']} graphs, "
           "expected 1")
    case = inputs["soft_clip_rows"]["explain"]
    close(full["out"], _soft_clip_reference(case["x"], case["limit"]),
          "the compiled soft_clip_rows (fullgraph=True)", rtol=1e-5, atol=1e-6)


def _pool_reference(tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return probe_definitions("compile_fuse")["_pool"](tokens, mask)


def batches_values(evidence: Evidence, inputs: dict) -> None:
    data = inputs["compile_for_batches"]
    outputs = value(evidence.probe("compile_for_batches")["outputs"], "compile_for_batches(fn, backend)")
    expect(isinstance(outputs, list) and len(outputs) == len(data["tokens"]),
           "run(tokens, mask) did not return a result for every call")
    for out, tokens, mask in zip(outputs, data["tokens"], data["masks"]):
        close(out, _pool_reference(tokens, mask), f"run(tokens, mask) for tokens of shape {tuple(tokens.shape)}",
              rtol=1e-5, atol=1e-5)


def _graphs(evidence: Evidence, inputs: dict) -> list:
    try:
        batches_values(evidence, inputs)
    except Fail as failure:
        raise Fail(f"this counts only for a run() that returns fn's values: {failure}") from None
    data = evidence.probe("compile_for_batches")
    graphs = data["graphs"]
    expect(isinstance(graphs, list) and all(isinstance(g, list) for g in graphs), "the recorded graphs could not be read")
    expect(data.get("forged") == 0 and data.get("captured") == len(graphs),
           "the backend was called by something other than torch.compile: hand it to torch.compile only")
    expect(len(graphs) > 0, "the backend received no graph: pass `backend` on to torch.compile")
    return graphs


def batches_once(evidence: Evidence, inputs: dict) -> None:
    graphs = _graphs(evidence, inputs)
    expect(len(graphs) == 1, f"fn was compiled {len(graphs)} times for {len(SHAPES)} calls with different batch sizes "
           "and lengths, expected once (the sizes that vary must be dynamic from the first call on)")


def batches_static_features(evidence: Evidence, inputs: dict) -> None:
    graphs = _graphs(evidence, inputs)
    token_shapes = [shape for graph in graphs for shape in graph if isinstance(shape, list) and len(shape) == 3]
    expect(len(token_shapes) > 0, "no compiled graph had the (batch, length, features) input")
    for shape in token_shapes:
        expect(shape[2] == str(FEATURES), f"the feature size should stay the number {FEATURES} in every graph, "
               f"a graph had tokens of shape ({', '.join(map(str, shape))})")


CHECKS = AssignmentChecks(
    assignment="08_compile_fuse",
    probe_module="compile_fuse",
    inputs=inputs,
    tests={
        "test_soft_clip_values": soft_clip_values,
        "test_soft_clip_one_graph": soft_clip_one_graph,
        "test_batches_values": batches_values,
        "test_batches_once": batches_once,
        "test_batches_static_features": batches_static_features,
    },
)
