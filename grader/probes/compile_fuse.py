"""Probes for 08_compile_fuse (run in the sandbox; see common.py).

Both exercises are checked without Inductor: ``torch._dynamo.explain`` for the graph breaks, and a
recording backend for the compilations, so no C++ or Triton code is generated here.
"""
import contextlib
import io
import sys

import torch
import torch._dynamo

_explain = torch._dynamo.explain      # bound before the student's code runs
_reset = torch._dynamo.reset
_compile = torch.compile
_counters = torch._dynamo.utils.counters
_getframe = sys._getframe


def _quietly(fn, *args):
    """fn(*args) with Dynamo's log lines kept off the sandbox's stderr."""
    with contextlib.redirect_stderr(io.StringIO()):
        return fn(*args)


def soft_clip_rows(namespace, inputs):
    fn = lookup(namespace, "soft_clip_rows")

    def one_case(case):
        x = case["x"].clone()
        out = fn(x, case["limit"])
        return {"out": plain(out), "unchanged": bool(torch.equal(x, case["x"]))}

    def explained():
        _reset()
        try:
            report = _quietly(lambda: _explain(fn)(inputs["explain"]["x"].clone(), inputs["explain"]["limit"]))
        finally:
            _reset()
        reasons = [str(r.reason).strip().splitlines()[0][:200] for r in list(report.break_reasons)[:5]]
        return {"graphs": int(report.graph_count), "breaks": int(report.graph_break_count),
                "reasons": reasons, "reason_count": len(report.break_reasons)}

    def full_graph():
        # fullgraph=True refuses any break, also one inside a loop (which explain would report as a skipped
        # function plus the graphs of the functions it calls).
        recorder = _Recorder()
        _reset()
        try:
            out = _quietly(lambda: _compile(fn, backend=recorder, fullgraph=True)(
                inputs["explain"]["x"].clone(), inputs["explain"]["limit"]))
        except Exception as exc:  # Unsupported, or an error Dynamo raised while tracing: not one clean graph
            text = str(exc).strip()
            return {"unsupported": f"{type(exc).__name__}: {text.splitlines()[0][:200] if text else ''}"}
        finally:
            _reset()
        return {"unsupported": None, "graphs": len(recorder.graphs), "out": plain(out)}

    return {"cases": [attempt(one_case, case) for case in inputs["cases"]], "explain": attempt(explained),
            "fullgraph": attempt(full_graph)}


def _pool(tokens, mask):
    """The function the grader compiles: attention-style pooling over the real tokens."""
    scores = tokens.sum(dim=-1).masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=1).unsqueeze(-1)
    return (weights * tokens).sum(dim=1)


class _Recorder:
    """A torch.compile backend that records the input shapes of every graph and runs it as it is.
    Only graphs handed over by Dynamo itself count (a call from elsewhere is noted as forged)."""

    def __init__(self):
        self.graphs, self.forged = [], 0

    def __call__(self, graph_module, example_inputs):
        frame, from_dynamo = _getframe(1), False
        for _ in range(12):
            if frame is None:
                break
            if "torch/_dynamo/" in frame.f_code.co_filename.replace("\\", "/"):
                from_dynamo = True
                break
            frame = frame.f_back
        if not from_dynamo:
            self.forged += 1
            return graph_module.forward
        shapes = []
        for node in graph_module.graph.nodes:
            value = node.meta.get("example_value") if node.op == "placeholder" else None
            if isinstance(value, torch.Tensor):
                shapes.append([str(size) for size in value.shape])
        self.graphs.append(shapes)
        return graph_module.forward


def compile_for_batches(namespace, inputs):
    make = lookup(namespace, "compile_for_batches")
    recorder = _Recorder()

    def calls():
        run = make(_pool, recorder)
        return [plain(run(tokens.clone(), mask.clone())) for tokens, mask in zip(inputs["tokens"], inputs["masks"])]

    _reset()
    before = _counters["stats"]["unique_graphs"]
    try:
        outputs = attempt(lambda: _quietly(calls))
    finally:
        captured = _counters["stats"]["unique_graphs"] - before
        _reset()
    return {"outputs": outputs, "graphs": recorder.graphs[:20], "forged": recorder.forged,
            "captured": int(captured)}
