"""Probes for 08_compile_fuse (run in the sandbox after grader/probe_helpers.py).

Both exercises are checked without Inductor: ``torch._dynamo.explain`` and ``fullgraph=True`` with a
recording backend for the graph breaks, and a recording backend for the compilations, so no C++ or
Triton code is generated here. Everything the checks rely on is bound when this module loads, before
the setup cells and the student's code run.
"""
import contextlib
import io
import os
import sys
import types

import torch
import torch._dynamo

_explain = torch._dynamo.explain      # bound before the student's code runs
_reset = torch._dynamo.reset
_compile = torch.compile
_counters = torch._dynamo.utils.counters
_config_copy = torch._dynamo.config.get_config_copy
_CONFIG_AT_START = _config_copy()     # Dynamo's global settings before any course or student code ran
_getframe = sys._getframe
_TorchFunctionMode = torch.overrides.TorchFunctionMode
_OpOverload, _OpOverloadPacket = torch._ops.OpOverload, torch._ops.OpOverloadPacket
_HigherOrderOperator = torch._ops.HigherOrderOperator
_GraphModule = torch.fx.GraphModule
_equal = torch.equal
_untyped_storage, _data_ptr = torch.Tensor.untyped_storage, torch.UntypedStorage.data_ptr
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TORCH_NAMESPACES = ("aten", "prims")
_BUILTIN_TYPES = (types.BuiltinFunctionType, types.BuiltinMethodType, type(str.join), type(object.__init__),
                  type(torch.Tensor.add))


def _quietly(fn, *args):
    """fn(*args) with Dynamo's log lines kept off the sandbox's stderr."""
    with contextlib.redirect_stderr(io.StringIO()):
        return fn(*args)


def _storage(t) -> int:
    return _data_ptr(_untyped_storage(t))


def _from_dynamo() -> bool:
    """Whether the backend was called by Dynamo (a call made by the student's code is not)."""
    frame = _getframe(2)
    for _ in range(12):
        if frame is None:
            return False
        if "torch/_dynamo/" in frame.f_code.co_filename.replace("\\", "/"):
            return True
        frame = frame.f_back
    return False


def _opaque(target):
    """None for a torch operation or a Python operator in a graph; else what the node calls, as text:
    a custom operator, or a function Dynamo was told not to look into (``allow_in_graph``)."""
    if isinstance(target, str):                      # call_method: a tensor method
        return None
    if isinstance(target, (_OpOverload, _OpOverloadPacket)):
        return None if getattr(target, "namespace", None) in _TORCH_NAMESPACES else f"the operator {target}"
    if isinstance(target, _HigherOrderOperator):    # torch.cond and the like: their subgraphs are checked too
        return None
    if isinstance(target, _BUILTIN_TYPES):           # C functions: torch.clamp, operator.mul, ...
        return None
    code = getattr(target, "__code__", None)
    if isinstance(target, types.FunctionType) and code is not None and code.co_filename.startswith(_TORCH_DIR):
        return None                                  # torch's own Python functions (torch.nn.functional, ...)
    return f"{getattr(target, '__name__', type(target).__name__)} (from {getattr(target, '__module__', '?')})"


class _Recorder:
    """A torch.compile backend that records every graph it gets (its tensor inputs' shapes, what its
    nodes call that is not a torch operation) and runs it as it is, counting the runs and keeping the
    last outputs. Only graphs handed over by Dynamo itself count (a call from elsewhere is noted as
    forged)."""

    def __init__(self):
        self.graphs, self.opaque, self.forged, self.runs, self.last = [], [], 0, [], None

    def __call__(self, graph_module, example_inputs):
        if not _from_dynamo():
            self.forged += 1
            return graph_module.forward
        shapes, opaque = [], []
        for node in graph_module.graph.nodes:
            value = node.meta.get("example_value") if node.op == "placeholder" else None
            if isinstance(value, torch.Tensor):
                shapes.append([str(size) for size in value.shape])
        for module in graph_module.modules():       # the graph and the subgraphs of torch.cond and the like
            if not isinstance(module, _GraphModule):
                continue
            for node in module.graph.nodes:
                if node.op == "call_function":
                    what = _opaque(node.target)
                elif node.op == "call_module":
                    sub = module.get_submodule(node.target)
                    what = None if type(sub).__module__.startswith("torch.") else f"the module {type(sub).__name__}"
                else:
                    what = None
                if what is not None and what not in opaque:
                    opaque.append(what[:120])
        index = len(self.graphs)
        self.graphs.append(shapes)
        self.opaque.append(opaque[:5])
        forward = graph_module.forward

        def run(*args):
            self.runs.append(index)
            self.last = forward(*args)
            return self.last

        return run

    def produced(self, out) -> bool:
        """Whether ``out`` is what the graph returned on its last run, or a view of it (a slice)."""
        last = self.last if isinstance(self.last, (list, tuple)) else [self.last]
        if type(out) is not torch.Tensor:
            return False
        for o in last:
            if type(o) is not torch.Tensor:
                continue
            if o is out or _storage(o) == _storage(out) != 0:
                return True
            if o.shape == out.shape and o.dtype == out.dtype and _equal(o, out):
                return True
        return False


# ---- soft_clip_rows ----------------------------------------------------------------------------

class _OpCount(_TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def _work(fn, x, limit):
    """fn(x, limit) with the lines of the student's code that ran and the torch calls it made counted:
    a loop over the rows makes both grow with the rows. ``traced`` is False when the answer switched
    the line tracing off."""
    ops = _OpCount()
    with StudentLines() as lines, ops:
        out = fn(x.clone(), limit)
    return {"out": plain(out), "lines": lines.count, "ops": ops.count, "traced": lines.traced}


def soft_clip_rows(namespace, inputs):
    fn = lookup(namespace, "soft_clip_rows")
    before = int(_counters["stats"]["unique_graphs"])

    def one_case(case):
        x = case["x"].clone()
        out = fn(x, case["limit"])
        return {"out": plain(out), "unchanged": bool(_equal(x, case["x"]))}

    cases = [attempt(one_case, case) for case in inputs["cases"]]
    work = [attempt(_work, fn, x, limit) for x, limit in inputs["work"]]
    x, limit = inputs["explain"]["x"], inputs["explain"]["limit"]
    eager = attempt(lambda: plain(fn(x.clone(), limit)))
    compiled_eagerly = int(_counters["stats"]["unique_graphs"]) - before   # a plain function compiles nothing

    def explained():
        _reset()
        try:
            report = _quietly(lambda: _explain(fn)(x.clone(), limit))
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
            out = _quietly(lambda: _compile(fn, backend=recorder, fullgraph=True)(x.clone(), limit))
        except Exception as exc:  # Unsupported, or an error Dynamo raised while tracing: not one clean graph
            text = str(exc).strip()
            return {"unsupported": f"{type(exc).__name__}: {text.splitlines()[0][:200] if text else ''}"}
        finally:
            _reset()
        return {"unsupported": None, "graphs": len(recorder.graphs), "forged": recorder.forged,
                "opaque": recorder.opaque[:3], "out": plain(out)}

    return {"cases": cases, "work": work, "eager": eager, "compiled_eagerly": compiled_eagerly,
            "explain": attempt(explained), "fullgraph": attempt(full_graph)}


# ---- compile_for_batches -----------------------------------------------------------------------

def _pool(tokens, mask):
    """The function the grader compiles: attention-style pooling over the real tokens."""
    scores = tokens.sum(dim=-1).masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=1).unsqueeze(-1)
    return (weights * tokens).sum(dim=1)


def compile_for_batches(namespace, inputs):
    make = lookup(namespace, "compile_for_batches")
    recorder = _Recorder()

    def one_call(run, tokens, mask):
        runs = len(recorder.runs)
        out = run(tokens.clone(), mask.clone())
        ran = recorder.runs[runs:]
        return {"out": plain(out), "graph_runs": len(ran), "from_graph": bool(ran) and recorder.produced(out),
                "graph": ran[-1] if ran else None}

    def calls():
        run = make(_pool, recorder)
        first = [attempt(one_call, run, tokens, mask) for tokens, mask in zip(inputs["tokens"], inputs["masks"])]
        graphs = len(recorder.graphs)
        other = [attempt(one_call, run, tokens, mask) for tokens, mask in zip(inputs["other_tokens"],
                                                                            inputs["other_masks"])]
        # read while the answer's function is alive: a setting put back when it is freed was changed all along
        return {"calls": first, "graphs_then": graphs, "other_calls": other, "config_changed": _config_changes()}

    _reset()
    before = _counters["stats"]["unique_graphs"]
    try:
        result = attempt(lambda: _quietly(calls))
    finally:
        captured = _counters["stats"]["unique_graphs"] - before
        _reset()
    return {"result": result, "graphs": recorder.graphs[:20], "forged": recorder.forged, "captured": int(captured),
            "config_changed": _config_changes()}


def _config_changes() -> list[str]:
    """The Dynamo settings that differ from what they were before any course or student code ran."""
    now = _config_copy()
    return sorted(key for key in set(now) | set(_CONFIG_AT_START) if now.get(key) != _CONFIG_AT_START.get(key))[:10]
