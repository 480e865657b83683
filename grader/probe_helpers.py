"""Helpers for probes. Probes run INSIDE the sandbox, after the student's code: they call the
student's functions on inputs chosen by the grader and return plain data (tensors, numbers,
strings, lists, dicts). They hold no expected answers; the trusted checks decide."""
import contextlib
import sys
import types

import torch
from torch import nn


# Bound when the probes load, before any student code runs: an answer that replaces torch.Tensor.detach
# (or clone, contiguous) must not change what the grader receives.
_detach, _clone, _contiguous = torch.Tensor.detach, torch.Tensor.clone, torch.Tensor.contiguous


def plain(value):
    """An exact-type tensor copy, or a marker saying what the value was instead."""
    if type(value) in (torch.Tensor, nn.Parameter):
        return _contiguous(_clone(_detach(value)))
    return f"<not a tensor: {type(value).__name__}>"


@contextlib.contextmanager
def dynamo_left_unloaded():
    """For running an answer on the meta device: meta kernels written in Python are wrapped in
    ``torch._disable_dynamo``, whose first call imports Dynamo, over a second of CPU in every sandbox
    for code that never compiles. Meanwhile ``torch._dynamo`` is a stand-in whose ``disable`` leaves a
    function as it is (unless Dynamo is loaded already); the real one loads on the next import."""
    if "torch._dynamo" in sys.modules:
        yield
        return
    stub = types.ModuleType("torch._dynamo")
    stub.disable = lambda fn=None, recursive=True, wrapping=True: fn
    sys.modules["torch._dynamo"] = stub
    try:
        yield
    finally:
        if sys.modules.get("torch._dynamo") is stub:
            del sys.modules["torch._dynamo"]


def attempt(fn, *args, **kwargs):
    """fn's result, or {"error": "..."} if it raised (the student's code may raise anything)."""
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:2000]}


def lookup(namespace, name, kind=None):
    """The student's object, with a clear error when it is missing."""
    if name not in namespace:
        raise NameError(f"{name} is not defined: did the answer cell run without errors?")
    value = namespace[name]
    if kind is not None and not (isinstance(value, type) and issubclass(value, kind)):
        raise TypeError(f"{name} should be a subclass of {kind.__name__}")
    return value


_TorchFunctionMode = torch.overrides.TorchFunctionMode
_settrace, _gettrace = __import__("sys").settrace, __import__("sys").gettrace
# torch.autograd's profiler, not torch.profiler's: that one's first start took 1.2 s in every sandbox
# (it looks for a GPU), this one 10 ms; both hand over kineto's events.
_profile = torch.autograd.profiler.profile
_every_thread = torch._C._profiler._ExperimentalConfig(profile_all_threads=True)


class _OpLog(_TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(str(getattr(func, "__name__", func))[:80])
        return func(*args, **(kwargs or {}))


class AtenLog:
    """The ATen operators that ran inside the block, on every thread, with their input shapes, from
    torch's profiler. It sits below torch's Python API, so it also sees what a TorchFunctionMode
    misses: code that switched ``__torch_function__`` off, called ``torch.ops.aten`` directly, or
    worked in another thread. ``calls``: [(name without "aten::", input shapes)], in order."""

    def __enter__(self):
        self._profiler = _profile(use_kineto=True, use_cpu=True, record_shapes=True, experimental_config=_every_thread)
        self._profiler.__enter__()
        return self

    def __exit__(self, *exc):
        self._profiler.__exit__(*exc)
        events = sorted(self._profiler.kineto_results.events(), key=lambda e: e.start_ns())
        self._spans = [(e.name(), e.start_ns(), e.end_ns()) for e in events]
        self.calls = [(e.name().removeprefix("aten::"), e.shapes()) for e in events if e.name().startswith("aten::")]
        return False

    def count(self, name: str, outside: str) -> int:
        """Calls of the operator ``name`` that ran outside every range labelled ``outside``
        (``record_function``): the grader's own code, such as an optimizer's step, is left out."""
        skip = [(start, end) for label, start, end in self._spans if label == outside]
        return sum(1 for label, start, _ in self._spans
                   if label == f"aten::{name}" and not any(a <= start <= b for a, b in skip))


def torch_ops(fn, *args):
    """The torch functions and methods ``fn(*args)`` called (``names``, with the ATen operators
    under them), how many calls it made (``count``), and the scatter operators' input shapes."""
    log = _OpLog()
    with AtenLog() as aten, log:
        fn(*args)
    names = {name.split(".")[0] for name in log.names + [name for name, _ in aten.calls]}  # softplus.default
    return {"names": sorted(names)[:300], "count": len(log.names),
            "scatters": [shapes for name, shapes in aten.calls if name.startswith("scatter")][:20]}


class StudentLines:
    """Counts the lines of the student's own code that run inside ``with StudentLines() as lines:``
    (a loop over the data makes the count grow with the data; vectorised code does not).
    ``traced`` is False when the answer switched the line tracing off."""

    def __init__(self):
        self.count, self.traced = 0, True
        self._installed = self._tracer  # one bound method, compared by identity on exit

    def _local(self, frame, event, arg):
        if event == "line":
            self.count += 1
        return self._local

    def _tracer(self, frame, event, arg):
        return self._local if frame.f_code.co_filename.startswith("<ipython-input") else None

    def __enter__(self):
        _settrace(self._installed)
        return self

    def __exit__(self, *exc):
        self.traced = _gettrace() is self._installed
        _settrace(None)
        return False


def student_lines(fn, *args) -> int:
    """How many lines of the student's own code ran during ``fn(*args)``; an error if the answer
    switched the line tracing off (then nothing says how many)."""
    with StudentLines() as lines:
        fn(*args)
    if not lines.traced:
        raise RuntimeError("the answer switched off line tracing (sys.settrace): its lines cannot be counted")
    return lines.count
