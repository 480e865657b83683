"""Probes for 09_profiling (run in the sandbox; see common.py).

Both exercises are about torch.profiler results, so the probes make profiles here, in the
student's process: labelled phases that sleep for durations the grader chose. They send back
the student's answers and the profile's raw rows (as plain data); the trusted checks rank the
raw rows themselves and know which phase the grader made slow.
"""
import time

import torch
from torch.profiler import ProfilerActivity, profile, record_function

# Bound when the probes load, before any student code runs.
_sleep = time.sleep
_profiler_enabled = torch.autograd._profiler_enabled
_CPU = ProfilerActivity.CPU


def _nap(ms):
    _sleep(ms / 1000.0)


def _make_profile(spec):
    """A CPU profile of labelled phases. spec: {"rounds", "size", "phases": [[label, own_ms, child, child_ms]]}:
    each phase sleeps own_ms in its own range, then child_ms inside a nested range named child (if any)."""
    with profile(activities=[_CPU]) as prof:
        for _ in range(spec["rounds"]):
            for label, own_ms, child, child_ms in spec["phases"]:
                with record_function(label):
                    _nap(own_ms)
                    if child:
                        with record_function(child):
                            _nap(child_ms)
            if spec["size"]:
                a = torch.ones(spec["size"], spec["size"])
                (a @ a).sum()
    return prof


def _raw_rows(prof):
    """key_averages() as plain rows: [key, count, self_cpu_time_total (µs), cpu_time_total (µs)]."""
    return [[str(row.key), int(row.count), float(row.self_cpu_time_total), float(row.cpu_time_total)]
            for row in prof.key_averages()]


def _number(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return f"<{type(x).__name__}>"
    return float(x)


def _plain_rows(result):
    """The student's ranked list, as plain data (anything unexpected becomes a marker string)."""
    if not isinstance(result, (list, tuple)):
        return {"type": type(result).__name__}
    rows = []
    for item in list(result)[:10000]:
        if isinstance(item, (tuple, list)) and len(item) == 3:
            name, ms, calls = item
            rows.append([name if type(name) is str else f"<{type(name).__name__}>", _number(ms),
                         int(calls) if isinstance(calls, int) and not isinstance(calls, bool)
                         else f"<{type(calls).__name__}>"])
        else:
            rows.append(f"<{type(item).__name__}>")
    return {"type": "list" if isinstance(result, list) else type(result).__name__, "rows": rows}


def top_ops(namespace, inputs):
    fn = lookup(namespace, "top_ops")
    main = _make_profile(inputs["main"])
    small = _make_profile(inputs["small"])
    out = {"main_raw": _raw_rows(main), "small_raw": _raw_rows(small)}   # read before the student's code sees them
    calls = {
        "default": lambda: fn(main),
        "n3": lambda: fn(main, 3),
        "self7": lambda: fn(main, 7, by="self_cpu_time_total"),
        "small_all": lambda: fn(small, 50),
        "total4": lambda: fn(main, 4, by="cpu_time_total"),
        "total6": lambda: fn(main, n=6, by="cpu_time_total"),
    }
    for name, call in calls.items():
        out[name] = attempt(lambda: _plain_rows(call()))
    return out


def _phase(label, first_ms, steady_ms, nested, first_calls, recording):
    """A phase of a synthetic step (a plain function, so there is little to read off it): sleeps
    first_ms on its first `first_calls` calls and steady_ms after that, inside a child range when
    nested, and logs in `recording` whether the profiler was recording at each call."""
    def phase():
        recording.append(bool(_profiler_enabled()))
        ms = first_ms if len(recording) <= first_calls else steady_ms
        if nested:
            with record_function(label + " (inner work)"):
                _nap(ms)
        else:
            _nap(ms)
    return phase


def find_bottleneck(namespace, inputs):
    fn = lookup(namespace, "find_bottleneck")

    def run(case):
        logs = {label: [] for label, *_ in case["phases"]}
        phases = {label: _phase(label, first, steady, nested, first_calls, logs[label])
                  for label, first, steady, nested, first_calls in case["phases"]}
        if case["defaults"]:
            result = fn(phases)
        else:
            result = fn(phases, steps=case["steps"], warmup=case["warmup"])
        return {"result": result if type(result) is str else f"<{type(result).__name__}>",
                "recording": {label: [flag is True for flag in log] for label, log in logs.items()}}

    return {name: attempt(run, case) for name, case in inputs["cases"].items()}
