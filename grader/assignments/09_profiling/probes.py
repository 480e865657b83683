"""Probes for 09_profiling (run in the sandbox after grader/probe_helpers.py).

Both exercises are about torch.profiler results, so the probes make profiles here, in the
student's process: labelled phases that sleep for durations the grader chose. They send back
the student's answers and the profile's raw rows (as plain data); the trusted checks rank the
raw rows themselves and know which phase the grader made slow.

Everything the probes rely on is bound when they load, before any student code runs, and the
profiler's classes are compared with what they were then: an answer that changed the profiler
(to make a profile say what it wants) is reported, however it reached it. While find_bottleneck
runs, a TorchFunctionMode notes every range a ``record_function`` opens and closes (it sees the
profiler op itself, so no spelling of the call escapes it), and each phase notes, at every call,
whether the profiler was recording and which ranges were open around it.
"""
import time

import torch
import torch._inductor  # noqa: F401  (see below)
import torch.autograd.profiler as _autograd_profiler
import torch.autograd.profiler_util as _profiler_util
import torch.profiler.profiler as _profiler_module
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# A profile's first start imports torch._inductor (profile.prepare_trace asks hasattr(torch, "_inductor")): seconds
# of imports that each probe's process would pay again. Imported above, once, before the probes' processes fork.

# Bound when the probes load, before any student code runs.
_sleep, _clock = time.sleep, time.perf_counter
_profiler_enabled = torch.autograd._profiler_enabled
_CPU = ProfilerActivity.CPU
_profile, _record_function, _schedule = profile, record_function, schedule
_FunctionMode = torch.overrides.TorchFunctionMode
_isinstance, _str, _type = isinstance, str, type

# The profiler as it was before any student code ran: classes (every attribute they define) and the names
# through which profiles are made and read.
_CLASSES = (("torch.profiler.profile", _profiler_module.profile),
            ("torch.profiler.profiler._KinetoProfile", _profiler_module._KinetoProfile),
            ("torch.autograd.profiler.profile", _autograd_profiler.profile),
            ("torch.autograd.profiler.record_function", _autograd_profiler.record_function),
            ("torch.autograd.profiler_util.EventList", _profiler_util.EventList),
            ("torch.autograd.profiler_util.FunctionEvent", _profiler_util.FunctionEvent),
            ("torch.autograd.profiler_util.FunctionEventAvg", _profiler_util.FunctionEventAvg),
            ("torch.autograd.profiler_util.FormattedTimesMixin", _profiler_util.FormattedTimesMixin))
_NAMES = (("torch.profiler", torch.profiler, ("profile", "record_function", "schedule", "ProfilerActivity")),
          ("torch.profiler.profiler", _profiler_module, ("profile", "schedule")),
          ("torch.autograd.profiler", _autograd_profiler, ("profile", "record_function")),
          ("torch.autograd", torch.autograd, ("_profiler_enabled",)),
          ("time", time, ("sleep", "perf_counter")))
_SNAPSHOT = ([(f"{label}.{attr}", cls, attr, value) for label, cls in _CLASSES for attr, value in vars(cls).items()]
             + [(f"{label}.{attr}", owner, attr, getattr(owner, attr)) for label, owner, attrs in _NAMES
                for attr in attrs])
_CLASS_KEYS = [(label, cls, frozenset(vars(cls))) for label, cls in _CLASSES]


def _tampered():
    """What the answer's code changed in the profiler (empty when nothing)."""
    changed = [name for name, owner, attr, original in _SNAPSHOT
               if getattr(owner, "__dict__", {}).get(attr) is not original]
    changed += [f"{label}.{attr}" for label, cls, keys in _CLASS_KEYS for attr in set(vars(cls)) - keys]
    return sorted(changed)[:20]


def _nap(ms):
    _sleep(ms / 1000.0)


# ---- top_ops -------------------------------------------------------------------------------

def _make_profile(spec):
    """A CPU profile of labelled phases: spec {"kind", "rounds", "size", "phases": [[label, own_ms, child, child_ms]]}.
    Each phase sleeps own_ms in its own range, then child_ms inside a nested range named child (if any).
    kind "plain": every round recorded, plus a matmul of the given size after each round.
    kind "scheduled": a schedule(wait=1, warmup=1, active=rounds - 2); every step also runs a range named
    "step <i>" (i = the step's index), so the recorded steps can be told from the others.
    kind "memory": profile_memory and record_shapes; each round makes a tensor of each size inside the
    phases' ranges and frees it outside any range (a "[memory]" row, which has no time)."""
    kind = spec["kind"]
    if kind == "scheduled":
        plan = _schedule(wait=1, warmup=1, active=spec["rounds"] - 2, repeat=1)
        context = _profile(activities=[_CPU], schedule=plan)
    elif kind == "memory":
        context = _profile(activities=[_CPU], profile_memory=True, record_shapes=True)
    else:
        context = _profile(activities=[_CPU])
    with context as prof:
        for index in range(spec["rounds"]):
            made = []
            for label, own_ms, child, child_ms in spec["phases"]:
                with _record_function(label):
                    _nap(own_ms)
                    if child:
                        with _record_function(child):
                            _nap(child_ms)
                    if kind == "memory":
                        made += [torch.ones(spec["size"]), torch.ones(spec["size"], 3) + 1]
            if kind == "scheduled":
                with _record_function(f"step {index}"):
                    _nap(0.2)
                prof.step()
            elif kind == "memory":
                del made[:]                     # freed outside any range
            elif spec["size"]:
                a = torch.ones(spec["size"], spec["size"])
                (a @ a).sum()
    return prof


def _raw_rows(prof):
    """key_averages() as plain rows: [key, count, self_cpu_time_total (µs), cpu_time_total (µs)]."""
    return [[_str(row.key), int(row.count), float(row.self_cpu_time_total), float(row.cpu_time_total)]
            for row in prof.key_averages()]


def _plain_item(x):
    """A number as plain data (its type kept apart), or a marker string."""
    if _isinstance(x, bool) or not _isinstance(x, (int, float)):
        return f"<{_type(x).__name__}>"
    return float(x) if _isinstance(x, float) else int(x)


def _plain_rows(result):
    """The student's ranked list, as plain data: for each row its values and their types."""
    if not _isinstance(result, (list, tuple)):
        return {"type": _type(result).__name__}
    rows = []
    for item in list(result)[:10000]:
        if _isinstance(item, (tuple, list)) and len(item) == 3:
            name, ms, calls = item
            rows.append({"row": "tuple" if _isinstance(item, tuple) else _type(item).__name__,
                         "name": name if _type(name) is str else f"<{_type(name).__name__}>",
                         "ms": _plain_item(ms), "ms_type": "float" if _isinstance(ms, float) else _type(ms).__name__,
                         "calls": _plain_item(calls),
                         "calls_type": "int" if _isinstance(calls, int) and not _isinstance(calls, bool)
                         else _type(calls).__name__})
        else:
            rows.append({"row": _type(item).__name__})
    return {"type": "list" if _type(result) is list else _type(result).__name__, "rows": rows}


def top_ops(namespace, inputs):
    fn = lookup(namespace, "top_ops")
    out = {"tampered": _tampered()}
    profiles = {name: _make_profile(spec) for name, spec in inputs["profiles"].items()}
    for name, prof in profiles.items():  # read before the student's code sees them
        out[f"{name}_raw"] = _raw_rows(prof)
    for name, (which, args, kwargs) in inputs["calls"].items():
        prof = profiles[which]
        out[name] = attempt(lambda: _plain_rows(fn(prof, *args, **kwargs)))
    out["tampered"] = sorted(set(out["tampered"]) | set(_tampered()))
    return out


# ---- find_bottleneck -----------------------------------------------------------------------

class _Ranges(_FunctionMode):
    """Notes the record_function ranges open at any moment (the profiler op record_function calls)."""

    def __init__(self):
        super().__init__()
        self.open = []  # [(handle, name)]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        qualified = _str(func)
        if qualified.startswith("profiler._record_function_enter") and args:
            self.open.append((result, _str(args[0])[:200]))
        elif qualified.startswith("profiler._record_function_exit") and args:
            for index in range(len(self.open) - 1, -1, -1):
                if self.open[index][0] is args[0]:
                    del self.open[index]
                    break
        return result

    def names(self):
        return [name for _, name in self.open]


def _phase(spec, calls, ranges, thrown):
    """A phase of a synthetic step (a plain function, so there is little to read off it).
    spec: [label, steady_ms, first_ms, first_calls, children, raises]. It logs each call (its label, whether
    the profiler was recording, the ranges open around it, then the ms it took and each child range took,
    and when it started and ended: sleeps overshoot on a loaded machine, and the profile shows what they
    really took), sleeps first_ms on its first `first_calls` calls
    and steady_ms after that, then opens a range for each [name, ms] in children and sleeps ms in it. With
    raises = k, its k-th call raises instead (the exception is kept in thrown, to tell whether it reaches the
    caller itself)."""
    label, steady_ms, first_ms, first_calls, children, raises = spec
    mine = []

    def phase():
        start = _clock()
        mine.append(1)
        call = [label, bool(_profiler_enabled()), ranges.names()[-8:], {}, [start * 1e3, None]]
        calls.append(call)
        if raises and len(mine) == raises:
            thrown.append(RuntimeError(f"phase {label!r} failed on purpose (the grader's test of errors)"))
            raise thrown[-1]
        _nap(first_ms if len(mine) <= first_calls else steady_ms)
        for name, ms in children:
            with _record_function(name):
                inner = _clock()
                _nap(ms)
                call[3][name] = call[3].get(name, 0.0) + (_clock() - inner) * 1e3
        end = _clock()
        call[3][label] = call[3].get(label, 0.0) + (end - start) * 1e3
        call[4][1] = end * 1e3
    return phase


def _after(fresh):
    """Whether a profiler is still recording, and (fresh) whether a new profile can be made: no profiler was left
    running, even one that is not recording now."""
    enabled, error = bool(_profiler_enabled()), None
    if fresh:
        try:
            with _profile(activities=[_CPU]):
                pass
        except BaseException as exc:
            error = f"{_type(exc).__name__}: {exc}"[:300]
    return {"enabled": enabled, "fresh": error}


def find_bottleneck(namespace, inputs):
    fn = lookup(namespace, "find_bottleneck")

    def run(case):
        calls, ranges, thrown = [], _Ranges(), []
        phases = {spec[0]: _phase(spec, calls, ranges, thrown) for spec in case["phases"]}
        raised, began = None, _clock() * 1e3
        try:
            with ranges:
                if case["defaults"]:
                    result = fn(phases)
                else:
                    result = fn(phases, steps=case["steps"], warmup=case["warmup"])
        except Exception as exc:  # the raising case expects one; any other case reports it as the answer's error
            result, raised = None, {"type": _type(exc).__name__, "message": _str(exc)[:300],
                                    "propagated": bool(thrown) and exc is thrown[0]}
        finished, raising = _clock() * 1e3, any(spec[5] for spec in case["phases"])
        return {"result": result if _type(result) is str else f"<{_type(result).__name__}>", "raised": raised,
                "calls": calls[:400], "window": [began, finished], "after": _after(fresh=raising and bool(calls))}

    cases = sorted(inputs["cases"].items(), key=lambda item: any(spec[5] for spec in item[1]["phases"]))
    out = {name: attempt(run, case) for name, case in cases}  # the raising case last: it may leave a profiler on
    out["tampered"] = _tampered()
    return out
