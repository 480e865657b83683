"""Checks for 09_profiling: top_ops and find_bottleneck (T094).

top_ops: the probe makes a profile in the student's process and sends its raw key_averages()
rows; the ranking is recomputed here from those rows (ties in any order). The raw rows are also
checked against the phases the grader asked for, so an altered profiler cannot pass them off.

find_bottleneck: synthetic steps whose slow phase the grader chose (it changes from case to
case); the expected label is computed here from the case, never received from the sandbox.
"""
from __future__ import annotations

import math

from . import AssignmentChecks, Evidence, Fail, expect, uses, value

SELF, TOTAL = "self_cpu_time_total", "cpu_time_total"
COLUMN = {SELF: 2, TOTAL: 3}   # raw row: [key, count, self µs, total µs]


def _profile_spec(rounds: int, phases: list, size: int) -> dict:
    return {"rounds": rounds, "size": size, "phases": phases}


def _case(phases: list, steps: int = 3, warmup: int = 1, defaults: bool = False) -> dict:
    """phases: [label, first_ms, steady_ms, nested, first_calls]."""
    return {"phases": phases, "steps": steps, "warmup": warmup, "defaults": defaults}


def inputs() -> dict:
    main = _profile_spec(2, [["decode images", 12.0, "", 0.0],
                             ["augment", 2.0, "augment: crops", 15.0],
                             ["forward", 8.0, "", 0.0],
                             ["backward", 1.0, "backward: kernels", 10.0],
                             ["log metrics", 0.5, "", 0.0]], size=64)
    small = _profile_spec(1, [["only phase", 6.0, "", 0.0], ["second phase", 3.0, "", 0.0]], size=0)
    cases = {
        "slowest_model": _case([["load", 3.0, 3.0, False, 0], ["model", 30.0, 30.0, False, 0],
                                ["log", 1.0, 1.0, False, 0]], defaults=True),
        "slowest_fetch": _case([["fetch", 30.0, 30.0, False, 0], ["compute", 3.0, 3.0, False, 0],
                                ["report", 1.0, 1.0, False, 0]], steps=2, warmup=1),
        "slowest_third": _case([["read", 2.0, 2.0, False, 0], ["resize", 4.0, 4.0, False, 0],
                                ["encode", 28.0, 28.0, False, 0], ["write", 3.0, 3.0, False, 0]], steps=4, warmup=2),
        "total_nested": _case([["wrapped", 25.0, 25.0, True, 0], ["plain", 10.0, 10.0, False, 0]]),
        "warmup_one": _case([["build cache", 350.0, 1.0, False, 1], ["steady work", 25.0, 25.0, False, 0]],
                            steps=3, warmup=1),
        "warmup_two": _case([["train", 20.0, 20.0, False, 0], ["lazy init", 200.0, 1.0, False, 2]],
                            steps=2, warmup=2),
    }
    return {"top_ops": {"main": main, "small": small}, "find_bottleneck": {"cases": cases}}


# ---- top_ops -------------------------------------------------------------------------------

def _raw(data: dict, name: str, spec: dict) -> list:
    rows = data.get(name)
    expect(isinstance(rows, list) and rows and all(isinstance(r, list) and len(r) == 4 for r in rows),
           "the grader's own profile could not be read in your notebook's process")
    by_key = {}
    for key, count, self_us, total_us in rows:
        by_key.setdefault(key, []).append((count, self_us, total_us))
    for label, own_ms, child, child_ms in spec["phases"]:  # the phases the grader asked for are really there
        found = by_key.get(label, [])
        expect(any(count == spec["rounds"] and total_us >= 0.9e3 * spec["rounds"] * (own_ms + child_ms)
                   for count, _, total_us in found),
               "the profile the grader made in your notebook's process does not show the phases it ran: "
               "has the profiler been changed?")
    return rows


def _ranked(rec, raw: list, n: int, by: str, what: str) -> None:
    rec = value(rec, what)
    expect(isinstance(rec, dict) and rec.get("type") == "list",
           f"{what} should return a list, got {rec.get('type') if isinstance(rec, dict) else rec!r}")
    rows = rec["rows"]
    column = COLUMN[by]
    want = sorted((r[column] / 1000.0 for r in raw), reverse=True)[:n]
    expect(len(rows) == len(want), f"{what} returned {len(rows)} rows, expected {len(want)}"
           + (" (every row when the table has fewer than n)" if len(want) < n else ""))
    for i, row in enumerate(rows):
        expect(isinstance(row, list), f"{what}: row {i} should be a tuple (name, milliseconds, calls), got {row}")
        name, ms, calls = row
        expect(type(name) is str and not name.startswith("<"), f"{what}: row {i}'s name should be a str, got {name}")
        expect(type(ms) is float, f"{what}: row {i}'s time should be a number of milliseconds, got {ms}")
        expect(type(calls) is int, f"{what}: row {i}'s call count should be an int, got {calls}")
    for i, (row, expected_ms) in enumerate(zip(rows, want)):
        got = row[1]
        if not math.isclose(got, expected_ms, rel_tol=1e-6, abs_tol=1e-6):
            hint = ""
            if expected_ms > 0 and math.isclose(got, expected_ms * 1000, rel_tol=1e-6):
                hint = " (that is the value in microseconds: the profiler reports µs, divide by 1000)"
            raise Fail(f"{what}: row {i} has {got:.6g} ms, but the {i + 1}. largest {by} in this profile is "
                       f"{expected_ms:.6g} ms{hint}")
    used = set()
    for i, (name, ms, calls) in enumerate(rows):
        match = [j for j, r in enumerate(raw) if j not in used and r[0] == name
                 and math.isclose(r[column] / 1000.0, ms, rel_tol=1e-6, abs_tol=1e-6)]
        expect(match, f"{what}: row {i} ({name!r}, {ms:.6g} ms) is not a row of key_averages() with that {by}")
        with_calls = [j for j in match if raw[j][1] == calls]
        expect(with_calls, f"{what}: row {i} ({name!r}) has calls={calls}, key_averages() says "
                           f"{raw[match[0]][1]}")
        used.add(with_calls[0])


def top_ops_ranking(evidence: Evidence, inputs: dict) -> None:
    data = value(evidence.probe("top_ops"), "top_ops")
    spec = inputs["top_ops"]
    main = _raw(data, "main_raw", spec["main"])
    small = _raw(data, "small_raw", spec["small"])
    _ranked(data["default"], main, 5, SELF, "top_ops(prof)")
    _ranked(data["n3"], main, 3, SELF, "top_ops(prof, 3)")
    _ranked(data["self7"], main, 7, SELF, 'top_ops(prof, 7, by="self_cpu_time_total")')
    _ranked(data["small_all"], small, 50, SELF, "top_ops(prof, 50) on a profile with fewer rows")


def top_ops_by(evidence: Evidence, inputs: dict) -> None:
    data = value(evidence.probe("top_ops"), "top_ops")
    main = _raw(data, "main_raw", inputs["top_ops"]["main"])
    _ranked(data["total4"], main, 4, TOTAL, 'top_ops(prof, 4, by="cpu_time_total")')
    _ranked(data["total6"], main, 6, TOTAL, 'top_ops(prof, n=6, by="cpu_time_total")')


# ---- find_bottleneck -----------------------------------------------------------------------

def _expected_label(case: dict) -> str:
    """The phase with the most time over the recorded (steady) steps: by construction of the case."""
    return max(case["phases"], key=lambda phase: phase[2])[0]


def _naive_label(case: dict) -> str:
    """What a profile of every step, warm-up included, would blame."""
    steps = case["warmup"] + case["steps"]
    cost = {label: first * min(first_calls, steps) + steady * max(steps - first_calls, 0)
            for label, first, steady, _, first_calls in case["phases"]}
    return max(cost, key=cost.get)


def _result(evidence: Evidence, name: str, case: dict) -> dict:
    data = value(evidence.probe("find_bottleneck"), "find_bottleneck")
    args = "phases" if case["defaults"] else f"phases, steps={case['steps']}, warmup={case['warmup']}"
    rec = value(data.get(name), f"find_bottleneck({args})")
    expect(isinstance(rec, dict) and "result" in rec, "find_bottleneck's results could not be read")
    return rec


def _judge(evidence: Evidence, inputs: dict, names: list[str], why: str) -> None:
    cases = inputs["find_bottleneck"]["cases"]
    for name in names:
        case = cases[name]
        got = _result(evidence, name, case)["result"]
        want = _expected_label(case)
        slow = ", ".join(f"{label!r} {steady:g} ms" for label, _, steady, _, _ in case["phases"])
        expect(got == want, f"a step whose phases take {slow} per step (after the warm-up): the bottleneck is "
                            f"{want!r}, find_bottleneck returned {got!r}. {why}")


def find_bottleneck_slowest(evidence: Evidence, inputs: dict) -> None:
    _judge(evidence, inputs, ["slowest_model", "slowest_fetch", "slowest_third"], "")


def find_bottleneck_total(evidence: Evidence, inputs: dict) -> None:
    _judge(evidence, inputs, ["total_nested"],
           "That phase does its work inside a child range: compare total time (cpu_time_total), not self time.")


def find_bottleneck_warmup(evidence: Evidence, inputs: dict) -> None:
    cases = inputs["find_bottleneck"]["cases"]
    for name in ("warmup_one", "warmup_two"):
        case = cases[name]
        got = _result(evidence, name, case)["result"]
        if got == _naive_label(case) and got != _expected_label(case):
            first_calls = max(phase[4] for phase in case["phases"])
            raise Fail(f"find_bottleneck(phases, steps={case['steps']}, warmup={case['warmup']}) blamed {got!r}, "
                       f"whose first {first_calls} call(s) are slow and later ones fast: the warm-up steps "
                       "must run but not be recorded")
    _judge(evidence, inputs, ["warmup_one", "warmup_two"], "The first `warmup` steps must not count.")


def find_bottleneck_profiler(evidence: Evidence, inputs: dict) -> None:
    find_bottleneck_slowest(evidence, inputs)        # a tool that finds nothing earns nothing here
    expect(uses(evidence.sources.get("find_bottleneck", ""), {"record_function"}, bare=True),
           "wrap each phase in torch.profiler.record_function(label)")
    for name, case in inputs["find_bottleneck"]["cases"].items():
        rec = _result(evidence, name, case)
        for label, recording in rec.get("recording", {}).items():
            on = sum(1 for flag in recording if flag is True)
            expect(on >= case["steps"], f"phase {label!r} ran {on} time(s) while torch.profiler was recording; "
                                        f"the {case['steps']} measured steps must run under the profiler")


CHECKS = AssignmentChecks(
    assignment="09_profiling",
    probe_module="profiling",
    inputs=inputs,
    tests={
        "test_top_ops_ranking": top_ops_ranking,
        "test_top_ops_by": top_ops_by,
        "test_find_bottleneck_slowest": find_bottleneck_slowest,
        "test_find_bottleneck_total": find_bottleneck_total,
        "test_find_bottleneck_warmup": find_bottleneck_warmup,
        "test_find_bottleneck_profiler": find_bottleneck_profiler,
    },
)
