"""Checks for 08_compile_fuse: soft_clip_rows (graph breaks, T093) and compile_for_batches (dynamic shapes, T093).

soft_clip_rows, 5 points: values 2 (the loop's values in every dtype, edges included, input unchanged,
all rows at once), one graph 3 (explain and fullgraph=True, a graph of torch operations, compiled = eager,
a plain function). compile_for_batches, 5 points: values 1 (fn's values, float32 and bfloat16, every call
through the compiled graph), once 2 (one graph for every float32 call, handed over by Dynamo, global
settings untouched), shapes 2 (feature size static in every graph, batch and length symbolic).
"""
from __future__ import annotations

from pathlib import Path

import torch

from grader.checking import AssignmentChecks, Evidence, Fail, close, expect, probe_definitions, tensor, uses, value

FEATURES = 24
# (batch, length) of the float32 calls: batch != length in every call; batch 2 and length 2 are the
# smallest sizes the spec admits (Dynamo specialises 0 and 1 only).
SHAPES = [(6, 19), (6, 40), (4, 27), (5, 2), (6, 11), (2, 50)]
OTHER_SHAPES = [(3, 7)]            # then a bfloat16 call: a new dtype may compile one more graph
# Names an answer to exercise 1 has no reason to touch: they would reach into Dynamo itself. This static
# look only adds to the run-time evidence (the graph's nodes, the compile counter, compiled = eager).
DYNAMO_NAMES = {"_dynamo", "compiler", "explain", "disable", "allow_in_graph", "set_stance"}
# The rounding each dtype allows against the loop's values (computed in float64, then rounded): a few
# units in the last place, since an answer may round the scale, then the product.
TOLERANCE = {torch.float16: (4e-3, 1e-4), torch.bfloat16: (3e-2, 1e-3), torch.float32: (1e-5, 1e-6),
             torch.float64: (1e-10, 1e-12)}


def inputs() -> dict:
    generator = torch.Generator().manual_seed(808)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=generator, dtype=torch.float32).to(dtype)

    def with_edges(x, limit):
        """x with a row of zeros and a row whose peak is exactly -limit."""
        x = x.clone()
        x[1] = 0
        x[2] = x[2].clamp(-limit / 2, limit / 2)
        x[2, 1] = -limit
        return x

    overflow = torch.tensor([[7000.0, -3000.0, 120.0, 0.5, -2.0, 6.0],      # x * limit overflows float16 here
                             [-6500.0, 6400.0, 1.0, 0.0, 30.0, -0.25],
                             [4.0, -11.0, 2.0, 0.125, 9.0, -1.0],            # within the limit
                             [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]], dtype=torch.float16)
    cases = [
        {"x": randn(7, 13) * 3, "limit": 2.5},                                   # the ordinary case (gates one graph)
        {"x": randn(4, 9), "limit": 100.0},                                     # nothing to clip
        {"x": torch.cat([torch.zeros(2, 6), randn(3, 6) * 4]), "limit": 1.5},   # rows of zeros
        {"x": torch.tensor([[2.0, -1.0, 0.5], [-3.0, 1.0, 2.0], [0.25, -0.5, 0.0]]), "limit": 2.0},  # at the limit
        {"x": randn(5, 6, dtype=torch.float64) * 2, "limit": 0.7},              # float64
        {"x": randn(1, 8) * 10, "limit": 3.0},                                  # a single row
        {"x": randn(6, 1) * 3, "limit": 1.25},                                  # a single column
        {"x": with_edges(randn(5, 11) * 3, 2.0).to(torch.float16), "limit": 2.0},   # float16 keeps float16
        {"x": with_edges(randn(4, 9) * 3, 1.5).to(torch.bfloat16), "limit": 1.5},   # bfloat16 keeps bfloat16
        {"x": overflow, "limit": 12.0},                                         # float16 near the top of its range
    ]
    # The same rows three times and thirty-six times: the work of an answer that handles all rows at once
    # does not depend on the number of rows (the rows clip alike, so a branch takes the same path).
    rows = torch.tensor([[3.0, -1.0, 0.5, 2.0], [0.5, 0.25, -1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    work = [(rows, 2.0), (rows.repeat(12, 1), 2.0)]
    tokens, masks = [], []
    for batch, length in SHAPES + OTHER_SHAPES:
        mask = torch.rand(batch, length, generator=generator) > 0.4
        mask[:, 0] = True
        tokens.append(randn(batch, length, FEATURES))
        masks.append(mask)
    first = len(SHAPES)
    return {"soft_clip_rows": {"cases": cases, "work": work, "explain": {"x": randn(6, 10) * 3, "limit": 2.0}},
            "compile_for_batches": {"tokens": tokens[:first], "masks": masks[:first],
                                    "other_tokens": [t.to(torch.bfloat16) for t in tokens[first:]],
                                    "other_masks": masks[first:]}}


# ---- soft_clip_rows ----------------------------------------------------------------------------

def _soft_clip_reference(x: torch.Tensor, limit: float) -> torch.Tensor:
    """The loop's values, computed in float64 and rounded once to x's dtype."""
    wide = x.double()
    peak = wide.abs().amax(dim=1, keepdim=True)
    return torch.where(peak > limit, wide * (limit / peak), wide).to(x.dtype)


def _describe(x: torch.Tensor) -> str:
    return f"x of shape {tuple(x.shape)} and dtype {x.dtype}"


def _case(evidence: Evidence, inputs: dict, index: int, unchanged: bool = True) -> None:
    case = inputs["soft_clip_rows"]["cases"][index]
    cases = value(evidence.probe("soft_clip_rows"), "soft_clip_rows")["cases"]
    expect(isinstance(cases, list) and len(cases) == len(inputs["soft_clip_rows"]["cases"]),
           "soft_clip_rows: the grader received no results")
    x, limit = case["x"], case["limit"]
    rec = value(cases[index], f"soft_clip_rows on {_describe(x)}")
    out = tensor(rec["out"], f"soft_clip_rows(x, {limit}) for {_describe(x)}")
    expect(out.dtype == x.dtype, f"soft_clip_rows(x, {limit}) for {_describe(x)} returned dtype {out.dtype}: "
           "the result keeps x's dtype (float16 and bfloat16 too)")
    expected = _soft_clip_reference(x, limit)
    if out.shape == expected.shape and not torch.isfinite(out).all():
        raise Fail(f"soft_clip_rows(x, {limit}) for {_describe(x)} returned inf or nan where the loop returns finite "
                   "values: an intermediate result overflowed x's dtype (compute the scale first, then multiply)")
    rtol, atol = TOLERANCE[x.dtype]
    close(out, expected, f"soft_clip_rows(x, {limit}) for {_describe(x)}", rtol=rtol, atol=atol)
    if unchanged:
        expect(rec["unchanged"] is True, "soft_clip_rows must not modify its input")


def soft_clip_values(evidence: Evidence, inputs: dict) -> None:
    for index in range(len(inputs["soft_clip_rows"]["cases"])):
        _case(evidence, inputs, index)
    work = value(evidence.probe("soft_clip_rows"), "soft_clip_rows")["work"]
    expect(isinstance(work, list) and len(work) == 2, "soft_clip_rows: the grader received no results")
    small, large = (value(rec, f"soft_clip_rows on {len(x)} rows") for rec, (x, _) in
                    zip(work, inputs["soft_clip_rows"]["work"]))
    for rec, (x, limit) in zip((small, large), inputs["soft_clip_rows"]["work"]):
        close(rec["out"], _soft_clip_reference(x, limit), f"soft_clip_rows(x, {limit}) for {_describe(x)}")
    expect(small["traced"] is True and large["traced"] is True,
           "soft_clip_rows switched off Python's line tracing (sys.settrace), so the grader cannot tell how it works")
    expect(small["ops"] > 0 and large["ops"] > 0, "soft_clip_rows hid its torch operations from the grader")
    rows = [len(x) for x, _ in inputs["soft_clip_rows"]["work"]]
    expect(large["lines"] <= small["lines"] + 2 and large["ops"] <= small["ops"] + 2,
           f"soft_clip_rows does work for every row in Python: on {rows[1]} rows it ran {large['lines']} lines of "
           f"your code and {large['ops']} torch calls, on {rows[0]} rows {small['lines']} and {small['ops']} "
           "(a loop or comprehension over the rows); compute every row's peak and scale at once")


def soft_clip_one_graph(evidence: Evidence, inputs: dict) -> None:
    try:
        _case(evidence, inputs, 0, unchanged=False)   # one graph counts only for a function that clips correctly
    except Fail as failure:
        raise Fail(f"one graph counts only for a function that returns the right values: {failure}") from None
    data = value(evidence.probe("soft_clip_rows"), "soft_clip_rows")
    expect(data["compiled_eagerly"] == 0, "calling soft_clip_rows compiled a graph: write a plain function (do not "
           "compile, decorate or wrap it; the checks compile it)")
    touched = uses(evidence.sources.get("soft_clip_rows", ""), DYNAMO_NAMES, self_checks=True)  # a reset counts
    expect(not touched, f"write a plain function: the answer cell should not use {sorted(touched)} "
           "(keep your experiments with explain and compile in another cell)")
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
    expect(full["forged"] == 0, "the compiler's backend was called by something other than torch.compile")
    expect(full["graphs"] == 1, f"torch.compile(soft_clip_rows, fullgraph=True) compiled {full['graphs']} graphs, "
           "expected 1")
    opaque = [what for graph in full["opaque"] for what in graph]
    if opaque:
        raise Fail(f"the graph Dynamo captured calls {opaque[0]}, which hides the work from the compiler: "
                   "write the computation with torch operations, so that Dynamo traces it")
    case = inputs["soft_clip_rows"]["explain"]
    what = f"the compiled soft_clip_rows (fullgraph=True) for {_describe(case['x'])}"
    eager = tensor(value(data["eager"], f"soft_clip_rows on {_describe(case['x'])}"), f"soft_clip_rows(x, {case['limit']})")
    close(full["out"], eager, f"{what}, against soft_clip_rows called eagerly on the same input",
          rtol=1e-6, atol=1e-7)
    close(full["out"], _soft_clip_reference(case["x"], case["limit"]), what, rtol=1e-5, atol=1e-6)


# ---- compile_for_batches -----------------------------------------------------------------------

def _pool_reference(tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return probe_definitions(Path(__file__).parent)["_pool"](tokens, mask)


def _batches(evidence: Evidence) -> dict:
    data = value(evidence.probe("compile_for_batches"), "compile_for_batches")
    return value(data["result"], "compile_for_batches(fn, backend)")


def _calls(evidence: Evidence, inputs: dict, key: str, tokens_key: str, masks_key: str) -> None:
    data = inputs["compile_for_batches"]
    records = _batches(evidence)[key]
    expect(isinstance(records, list) and len(records) == len(data[tokens_key]),
           "run(tokens, mask) did not return a result for every call")
    for rec, tokens, mask in zip(records, data[tokens_key], data[masks_key]):
        what = f"run(tokens, mask) for {tokens.dtype} tokens of shape {tuple(tokens.shape)}"
        rec = value(rec, what)
        out = tensor(rec["out"], what)
        expected = _pool_reference(tokens, mask)
        expect(out.dtype == expected.dtype, f"{what} returned dtype {out.dtype}, but fn returns {expected.dtype}: "
               "pass the inputs on as they are")
        tolerance = 1e-5 if tokens.dtype == torch.float32 else 2e-2
        close(out, expected, what, rtol=tolerance, atol=tolerance)
        expect(rec["graph_runs"] > 0, f"{what} did not run the compiled function: every call of run must go through "
               "the function torch.compile returned")
        expect(rec["from_graph"] is True, f"{what} returned a result that the compiled graph did not produce: run "
               "should return what the function torch.compile returned gives back (or a slice of it)")


def batches_values(evidence: Evidence, inputs: dict) -> None:
    _calls(evidence, inputs, "calls", "tokens", "masks")
    _calls(evidence, inputs, "other_calls", "other_tokens", "other_masks")


def _graphs(evidence: Evidence, inputs: dict) -> tuple[list, dict]:
    try:
        _calls(evidence, inputs, "calls", "tokens", "masks")
    except Fail as failure:
        raise Fail(f"this counts only for a run() that returns fn's values from the compiled function: {failure}") from None
    data = evidence.probe("compile_for_batches")
    graphs = data["graphs"]
    expect(isinstance(graphs, list) and all(isinstance(g, list) for g in graphs), "the recorded graphs could not be read")
    expect(data.get("forged") == 0 and data.get("captured") == len(graphs),
           "the backend was called by something other than torch.compile: hand it to torch.compile only")
    expect(len(graphs) > 0, "the backend received no graph: pass `backend` on to torch.compile")
    return graphs, data


def batches_once(evidence: Evidence, inputs: dict) -> None:
    graphs, data = _graphs(evidence, inputs)
    compiled = _batches(evidence)["graphs_then"]
    expect(compiled == 1, f"fn was compiled {compiled} times for {len(SHAPES)} calls with different batch sizes "
           "and lengths, expected once (the sizes that vary must be dynamic from the first call on)")
    changed = sorted(set(data.get("config_changed") or []) | set(_batches(evidence).get("config_changed") or []))
    expect(changed == [], f"Dynamo's global settings were changed ({', '.join(map(str, changed or []))}): every other "
           "function compiled in the program would be affected. Mark the inputs (mark_dynamic, mark_static), or "
           "change a setting only while run calls the compiled function (torch._dynamo.config.patch)")


def _size(shape: list, index: int) -> str:
    return str(shape[index]) if len(shape) > index else "?"


def batches_static_features(evidence: Evidence, inputs: dict) -> None:
    graphs, _ = _graphs(evidence, inputs)
    token_shapes = [shape for graph in graphs for shape in graph if isinstance(shape, list) and len(shape) == 3]
    expect(len(token_shapes) > 0, "no compiled graph had the (batch, length, features) input")
    for shape in token_shapes:
        expect(shape[2] == str(FEATURES), f"the feature size should stay the number {FEATURES} in every graph, "
               f"a graph had tokens of shape ({', '.join(map(str, shape))})")
    last = _batches(evidence)["calls"][-1]["graph"]
    expect(type(last) is int and 0 <= last < len(graphs), "the graph that ran the last call could not be found")
    shape = next((s for s in graphs[last] if isinstance(s, list) and len(s) == 3), None)
    expect(shape is not None, "the graph that ran the last call has no (batch, length, features) input")
    fixed = [name for name, size in (("batch size", shape[0]), ("length", shape[1])) if str(size).isdigit()]
    expect(not fixed, f"the graph that ran the last call (of {len(SHAPES)} with different sizes) has tokens of shape "
           f"({', '.join(map(str, shape))}): the {' and the '.join(fixed)} should be symbolic, not fixed numbers "
           "(padding to fixed sizes fixes them)")


CHECKS = AssignmentChecks(
    inputs=inputs,
    tests={
        "test_soft_clip_values": soft_clip_values,
        "test_soft_clip_one_graph": soft_clip_one_graph,
        "test_batches_values": batches_values,
        "test_batches_once": batches_once,
        "test_batches_static_features": batches_static_features,
    },
)
