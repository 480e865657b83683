"""Checks for 09_profiling: top_ops and find_bottleneck (T094).

top_ops: the probe makes profiles in the student's process (a plain one, a small one, one with a
schedule, one with memory events, input shapes and a row of zero time) and sends their raw
key_averages() rows; the ranking is recomputed here from those rows (ties in any order). The raw
rows are also checked against what the grader asked the profiler to record, and the profiler's
classes against what they were before any student code ran, so an altered profiler cannot pass
its tables off.

find_bottleneck: synthetic steps whose slow phase the grader chose (it changes from case to
case); the expected label is computed here from the case, never received from the sandbox. The
answer must be the profile's: in one case a phase opens a range named after another phase, so
the profile's row of that label holds more time than a stopwatch around each phase measures.
Every check of this exercise needs that case right (a tool that does not read a profile earns
nothing), and the probe's spies (bound before student code) show whether each phase ran in
order, under a recording profiler and inside its own record_function range.
"""
from __future__ import annotations

import math

from grader.checking import AssignmentChecks, Evidence, Fail, expect, value

SELF, TOTAL = "self_cpu_time_total", "cpu_time_total"
COLUMN = {SELF: 2, TOTAL: 3}   # raw row: [key, count, self µs, total µs]


# ---- inputs --------------------------------------------------------------------------------

def _profile_spec(kind: str, rounds: int, phases: list, size: int = 0) -> dict:
    """phases: [label, own_ms, child, child_ms] (see probes.py beside this file, _make_profile)."""
    return {"kind": kind, "rounds": rounds, "size": size, "phases": phases}


def _phase(label: str, ms: float, children=(), first_ms: float = 0.0, first_calls: int = 0, raises: int = 0) -> list:
    """A phase: sleeps ms per call (first_ms on its first `first_calls` calls), then opens a range for each
    [name, ms] in children; with raises = k its k-th call raises RuntimeError."""
    return [label, ms, first_ms, first_calls, [list(c) for c in children], raises]


def _case(phases: list, steps: int = 3, warmup: int = 1, defaults: bool = False) -> dict:
    return {"phases": phases, "steps": steps, "warmup": warmup, "defaults": defaults}


GATE = "profile_names"  # the case only a profile gets right


def inputs() -> dict:
    profiles = {
        "main": _profile_spec("plain", 2, [["decode images", 12.0, "", 0.0], ["augment", 2.0, "augment: crops", 15.0],
                                           ["forward", 8.0, "", 0.0], ["backward", 1.0, "backward: kernels", 10.0],
                                           ["log metrics", 0.5, "", 0.0]], size=64),
        "small": _profile_spec("plain", 1, [["only phase", 6.0, "", 0.0], ["second phase", 3.0, "", 0.0]]),
        "scheduled": _profile_spec("scheduled", 5, [["load", 1.5, "", 0.0], ["model", 3.0, "model: kernels", 2.0]]),
        "memory": _profile_spec("memory", 2, [["allocate", 1.0, "", 0.0], ["compute", 2.0, "compute: inner", 1.0]],
                                size=256),
    }
    calls = {  # name -> [profile, args, kwargs]
        "default": ["main", [], {}],
        "n3": ["main", [3], {}],
        "self7": ["main", [7], {"by": SELF}],
        "small_all": ["small", [50], {}],
        "total4": ["main", [4], {"by": TOTAL}],
        "total6": ["main", [], {"n": 6, "by": TOTAL}],
        "scheduled_all": ["scheduled", [100], {}],
        "scheduled3": ["scheduled", [3], {}],
        "memory_all": ["memory", [100], {}],
        "memory4": ["memory", [4], {}],
        "none": ["main", [0], {}],
    }
    # Phases sleep; under heavy load a sleep overshoots by milliseconds, so the answer's margin over the
    # runner-up is at least 10 ms per recorded step in every case (the profile's totals add the steps).
    cases = {
        "slowest_model": _case([_phase("load", 3.0), _phase("model", 20.0), _phase("log", 1.0)], defaults=True),
        "slowest_fetch": _case([_phase("fetch", 20.0), _phase("compute", 3.0), _phase("report", 1.0)],
                               steps=2, warmup=1),
        "slowest_third": _case([_phase("read", 2.0), _phase("resize", 4.0), _phase("encode", 18.0),
                                _phase("write", 3.0)], steps=3, warmup=2),
        "shared_helper": _case([_phase("load", 0.0, [["io", 24.0]]), _phase("augment", 0.0, [["io", 24.0]]),
                                _phase("model", 36.0)], steps=3, warmup=1),
        "total_nested": _case([_phase("wrapped", 0.0, [["wrapped: inner work", 30.0]]), _phase("plain", 10.0)]),
        "warmup_one": _case([_phase("build cache", 1.0, first_ms=120.0, first_calls=1), _phase("steady work", 20.0)],
                            steps=3, warmup=1),
        "warmup_two": _case([_phase("train", 15.0), _phase("lazy init", 1.0, first_ms=60.0, first_calls=2)],
                            steps=2, warmup=2),
        "warmup_zero": _case([_phase("encode", 3.0), _phase("upload", 15.0)], steps=1, warmup=0),
        # decode's range holds a range named "augment": the row "augment" adds it to augment's own 25 ms
        GATE: _case([_phase("decode", 0.0, [["augment", 40.0]]), _phase("augment", 25.0), _phase("log", 2.0)],
                    steps=2, warmup=1),
        "raises": _case([_phase("fine", 1.0), _phase("breaks", 1.0, raises=2)], steps=2, warmup=1),
    }
    return {"top_ops": {"profiles": profiles, "calls": calls}, "find_bottleneck": {"cases": cases}}


# ---- top_ops -------------------------------------------------------------------------------

def _call_text(call: list) -> str:
    which, args, kwargs = call
    parts = ["prof", *map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())]
    return f"top_ops({', '.join(parts)})"


PROFILE_WORDS = {"main": "a profile of five labelled phases and a matmul",
                 "small": "a profile with only a few rows",
                 "scheduled": "a profile made with schedule(wait=1, warmup=1, active=3)",
                 "memory": "a profile with profile_memory=True and record_shapes=True (its '[memory]' row has no time)"}


def _raw(data: dict, name: str, spec: dict) -> list:
    """The raw rows of one of the grader's profiles, once they show what the grader recorded."""
    expect(not data.get("tampered"), "your code changed torch's profiler before the grader's profiles were made "
           f"({', '.join(data.get('tampered', []))}): their tables cannot be trusted, so nothing of top_ops is graded")
    rows = data.get(f"{name}_raw")
    expect(isinstance(rows, list) and rows and all(isinstance(r, list) and len(r) == 4 for r in rows),
           "the grader's own profile could not be read in your notebook's process")
    by_key: dict = {}
    for key, count, self_us, total_us in rows:
        by_key.setdefault(key, []).append((count, self_us, total_us))
    changed = ("the profile the grader made in your notebook's process does not show what it recorded: "
               "has the profiler been changed?")
    kind, rounds = spec["kind"], spec["rounds"]
    recorded = rounds - 2 if kind == "scheduled" else rounds
    for label, own_ms, child, child_ms in spec["phases"]:
        expect(any(count == recorded and total_us >= 0.9e3 * recorded * (own_ms + child_ms)
                   for count, _, total_us in by_key.get(label, [])), changed)
    if kind == "scheduled":
        steps = {key for key in by_key if key.startswith("step ")}
        expect(steps == {f"step {i}" for i in range(2, rounds)} and "ProfilerStep*" in by_key, changed)
    if kind == "memory":
        expect(any(s == 0.0 and t == 0.0 and c >= 1 for c, s, t in by_key.get("[memory]", [])), changed)
    return rows


def _ranked(rec, raw: list, n: int, by: str, what: str, strict: bool = False) -> None:
    """rec is the answer's list: the n largest `by` values of the raw rows, largest first, each a row of
    the table with its count. strict: also the types the spec names (a list of tuples, float, int)."""
    rec = value(rec, what)
    expect(isinstance(rec, dict) and rec.get("type") == "list",
           f"{what} should return a list, got {rec.get('type') if isinstance(rec, dict) else rec!r}")
    rows = rec["rows"]
    column = COLUMN[by]
    want = sorted((r[column] / 1000.0 for r in raw), reverse=True)[:n]
    expect(len(rows) == len(want), f"{what} returned {len(rows)} rows, expected {len(want)}"
           + (f" (the table has {len(raw)} rows: return every row when it has fewer than n, rows with no time "
              "included)" if len(want) < n else "")
           + (" (n=0 asks for no rows)" if n == 0 else ""))
    for i, row in enumerate(rows):
        expect("name" in row, f"{what}: row {i} should be a tuple (name, milliseconds, calls), got a {row['row']}")
        expect(not row["name"].startswith("<"), f"{what}: row {i}'s name should be a str, got {row['name']}")
        expect(not isinstance(row["ms"], str), f"{what}: row {i}'s time should be a number, got {row['ms']}")
        expect(not isinstance(row["calls"], str), f"{what}: row {i}'s call count should be an int, got {row['calls']}")
        if strict:
            expect(row["row"] == "tuple", f"{what}: row {i} should be a tuple (name, milliseconds, calls), "
                                          f"got a {row['row']}")
            expect(row["ms_type"] == "float", f"{what}: row {i}'s time should be a float number of milliseconds, "
                                              f"got a {row['ms_type']} ({row['ms']!r})")
            expect(row["calls_type"] == "int", f"{what}: row {i}'s call count should be an int, "
                                               f"got a {row['calls_type']}")
    for i, (row, expected_ms) in enumerate(zip(rows, want)):
        got = float(row["ms"])
        if not math.isclose(got, expected_ms, rel_tol=1e-6, abs_tol=1e-9):
            hint = ""
            if expected_ms > 0 and math.isclose(got, expected_ms * 1000, rel_tol=1e-6):
                hint = " (that is the value in microseconds: the profiler reports µs, divide by 1000)"
            elif any(got == round(expected_ms, digits) for digits in range(7)):
                hint = " (that is the value rounded: give the table's value divided by 1000, not rounded)"
            raise Fail(f"{what}: row {i} has {got:.9g} ms, but the {i + 1}. largest {by} in this profile is "
                       f"{expected_ms:.9g} ms{hint}")
    used: set = set()
    for i, row in enumerate(rows):
        name, ms, calls = row["name"], float(row["ms"]), row["calls"]
        match = [j for j, r in enumerate(raw) if j not in used and r[0] == name
                 and math.isclose(r[column] / 1000.0, ms, rel_tol=1e-6, abs_tol=1e-9)]
        expect(match, f"{what}: row {i} ({name!r}, {ms:.6g} ms) is not a row of key_averages() with that {by} "
                      "(the rows are the table's own, grouped by name only)")
        with_calls = [j for j in match if raw[j][1] == calls]
        expect(with_calls, f"{what}: row {i} ({name!r}) has calls={calls}, key_averages() says {raw[match[0]][1]}")
        used.add(with_calls[0])


def _top_ops(evidence: Evidence, inputs: dict, names: list[str], strict: bool = False) -> None:
    data = value(evidence.probe("top_ops"), "top_ops")
    spec = inputs["top_ops"]
    for name in names:
        call = spec["calls"][name]
        which, args, kwargs = call
        raw = _raw(data, which, spec["profiles"][which])
        n = args[0] if args else kwargs.get("n", 5)
        _ranked(data.get(name), raw, n, kwargs.get("by", SELF), f"{_call_text(call)} on {PROFILE_WORDS[which]}",
                strict=strict)


def top_ops_ranking(evidence: Evidence, inputs: dict) -> None:
    _top_ops(evidence, inputs, ["default", "n3", "self7", "small_all"], strict=True)


def top_ops_by(evidence: Evidence, inputs: dict) -> None:
    _top_ops(evidence, inputs, ["total4", "total6"])


def top_ops_edges(evidence: Evidence, inputs: dict) -> None:
    _top_ops(evidence, inputs, ["scheduled_all", "scheduled3", "memory_all", "memory4", "none"])


# ---- find_bottleneck -----------------------------------------------------------------------

def _durations(case: dict) -> dict:
    """Per recorded step: how long each phase takes from call to return (what a stopwatch measures)."""
    return {label: ms + sum(c_ms for _, c_ms in children) for label, ms, _, _, children, _ in case["phases"]}


def _profile_totals(case: dict) -> dict:
    """Per recorded step: each label's cpu_time_total in key_averages(), which adds up every range of that
    name (a phase's own range, and any range of that name opened inside another phase)."""
    totals = _durations(case)
    for _, _, _, _, children, _ in case["phases"]:
        for name, ms in children:
            if name in totals:
                totals[name] += ms
    return totals


def _expected_label(case: dict) -> str:
    totals = _profile_totals(case)
    return max(totals, key=totals.get)


def _bounds(case: dict, rec: dict) -> tuple[dict, dict] | None:
    """(least, most) ms each label's row can hold over the measured steps, from the probe's clock (bound
    before student code): a phase's range holds at least what the clock saw inside the phase, and at
    most the time from the end of the phase before it to the start of the one after it (the range's
    enter and exit lie between); a child's range lies inside its phase. Sound on a loaded machine,
    where sleeps overshoot and the process waits for a core: the profile's own rows lie within these
    bounds. None unless the steps ran in order, each range took at least the sleep asked of it, and
    the clock moved forward."""
    labels, steps = [phase[0] for phase in case["phases"]], case["warmup"] + case["steps"]
    calls, window = rec.get("calls"), rec.get("window")
    if not (isinstance(calls, list) and [c[0] if isinstance(c, list) and len(c) == 5 else None for c in calls]
            == labels * steps and isinstance(window, list) and len(window) == 2):
        return None
    least, most, seen = dict.fromkeys(labels, 0.0), dict.fromkeys(labels, 0.0), dict.fromkeys(labels, 0)
    times = [window[0]] + [t for call in calls for t in call[4]] + [window[1]]
    if not all(isinstance(t, float) for t in times) or times != sorted(times):
        return None
    for i, call in enumerate(calls):
        label, (_, own, first_ms, first_calls, children, _) = call[0], case["phases"][i % len(labels)]
        seen[label] += 1
        took = call[3] if isinstance(call[3], dict) else {}
        asked = {label: (first_ms if seen[label] <= first_calls else own) + sum(ms for _, ms in children),
                 **{name: ms for name, ms in children}}
        if set(took) != set(asked) or any(not isinstance(took[n], float) or not asked[n] - 0.05 <= took[n] < 1e6
                                          for n in asked):
            return None
        if i // len(labels) < case["warmup"]:
            continue
        for name, ms in took.items():
            if name in least:
                room = times[2 * i + 3] - times[2 * i] if name == label else took[label]  # neighbours' end/start
                least[name] += ms
                most[name] += room
    return least, most


def _accepted(case: dict, rec: dict) -> set[str]:
    """The labels a right answer may return: the case's slowest by design, and any label whose row could
    be the largest by the run's own clock (its most against every other row's least)."""
    accepted, bounds = {_expected_label(case)}, _bounds(case, rec)
    if bounds:
        least, most = bounds
        accepted |= {label for label in least if all(most[label] >= least[other] for other in least if other != label)}
    return accepted


def _recorded_warmup(case: dict, rec: dict) -> bool:
    """Whether the profiler was recording while a warm-up step ran (the spies' evidence: load cannot change it)."""
    per_step = len(case["phases"])
    return any(isinstance(call, list) and call[1] is True for call in rec.get("calls", [])[:case["warmup"] * per_step])


def _naive_label(case: dict) -> str:
    """What a profile of every step, warm-up included, would blame."""
    steps = case["warmup"] + case["steps"]
    cost = {label: first * min(first_calls, steps) + ms * max(steps - first_calls, 0)
            for label, ms, first, first_calls, _, _ in case["phases"]}
    return max(cost, key=cost.get)


def _call(case: dict) -> str:
    args = "phases" if case["defaults"] else f"phases, steps={case['steps']}, warmup={case['warmup']}"
    return f"find_bottleneck({args})"


def _describe(case: dict) -> str:
    parts = []
    for label, ms, _, _, children, _ in case["phases"]:
        inner = "".join(f", then {c_ms:g} ms in a range {name!r}" for name, c_ms in children)
        parts.append(f"{label!r} {ms:g} ms{inner}")
    return "; ".join(parts)


def _result(evidence: Evidence, name: str, inputs: dict) -> dict:
    data = value(evidence.probe("find_bottleneck"), "find_bottleneck")
    case = inputs["find_bottleneck"]["cases"][name]
    rec = value(data.get(name), _call(case))
    expect(isinstance(rec, dict) and "result" in rec, "find_bottleneck's results could not be read")
    if name != "raises" and rec.get("raised"):
        raise Fail(f"{_call(case)} on a step whose phases take ({_describe(case)}) raised "
                   f"{rec['raised']['type']}: {rec['raised']['message']}")
    return rec


def _reads_the_profile(evidence: Evidence, inputs: dict) -> None:
    """Every find_bottleneck check needs this: the answer is the profile's, and the profiler is the real one."""
    data = value(evidence.probe("find_bottleneck"), "find_bottleneck")
    expect(not data.get("tampered"), "your code changed torch's profiler or the clock "
           f"({', '.join(data.get('tampered', []))}): nothing of find_bottleneck is graded on an altered profiler")
    case = inputs["find_bottleneck"]["cases"][GATE]
    rec = _result(evidence, GATE, inputs)
    got, want = rec["result"], _expected_label(case)
    if got not in _accepted(case, rec):
        totals, took = _profile_totals(case), _durations(case)
        raise Fail(f"{_call(case)} on a step whose phases take ({_describe(case)}) returned {got!r}, but the profile "
                   f"says {want!r}: its key_averages() row adds up every range named {want!r}, also the one another "
                   f"phase opens ({totals[want]:g} ms per step, the most of any label, while a stopwatch around each "
                   f"call sees {took[want]:g} ms for {want!r}"
                   + (f" and {took[got]:g} ms for {got!r}). " if got in took else "). ")
                   + "find_bottleneck's checks count only an answer read from the profile: return the label whose "
                   "row has the largest cpu_time_total")


def _judge(evidence: Evidence, inputs: dict, names: list[str], why: str) -> None:
    _reads_the_profile(evidence, inputs)
    cases = inputs["find_bottleneck"]["cases"]
    labels_hint = " It should return one of the phases' labels, never an operator's or another range's name."
    for name in names:
        case = cases[name]
        rec = _result(evidence, name, inputs)
        got, want = rec["result"], _expected_label(case)
        labels = [phase[0] for phase in case["phases"]]
        expect(got in _accepted(case, rec), f"{_call(case)} on a step whose phases take ({_describe(case)}) per step after the "
                            f"warm-up: the bottleneck is {want!r}, find_bottleneck returned {got!r}."
                            + (labels_hint if got not in labels else f" {why}".rstrip()))


def find_bottleneck_slowest(evidence: Evidence, inputs: dict) -> None:
    _judge(evidence, inputs, ["slowest_model", "slowest_fetch", "slowest_third", "shared_helper"], "")


def find_bottleneck_total(evidence: Evidence, inputs: dict) -> None:
    _judge(evidence, inputs, ["total_nested"],
           "That phase does its work inside a child range: compare total time (cpu_time_total), not self time.")


def find_bottleneck_warmup(evidence: Evidence, inputs: dict) -> None:
    _reads_the_profile(evidence, inputs)
    cases = inputs["find_bottleneck"]["cases"]
    for name in ("warmup_one", "warmup_two"):
        case = cases[name]
        rec = _result(evidence, name, inputs)
        got = rec["result"]
        first_calls = max(phase[3] for phase in case["phases"])
        expect(not _recorded_warmup(case, rec),
               f"{_call(case)}: the profiler was recording while the first {case['warmup']} (warm-up) step(s) ran"
               + (f", and blamed {got!r}, whose first {first_calls} call(s) are slow and later ones fast"
                  if got == _naive_label(case) else "") + ": the warm-up steps must run but not be recorded")
        expect(not (got == _naive_label(case) and got not in _accepted(case, rec)),
               f"{_call(case)} blamed {got!r}, whose first {first_calls} call(s) are slow and later ones fast: "
               "the warm-up steps must run but not be recorded")
    _judge(evidence, inputs, ["warmup_one", "warmup_two", "warmup_zero"],
           "The first `warmup` steps must not count; warmup=0 records every step.")


def find_bottleneck_profiler(evidence: Evidence, inputs: dict) -> None:
    """Spies bound before student code: every phase called once per step in the dict's order, the measured
    steps under a recording profiler, each phase inside its own record_function range, no profiler left on."""
    _reads_the_profile(evidence, inputs)
    for name, case in inputs["find_bottleneck"]["cases"].items():
        rec = _result(evidence, name, inputs)
        labels = [phase[0] for phase in case["phases"]]
        after = rec.get("after") or {}
        if name == "raises":
            raised = rec.get("raised")
            expect(bool(raised), f"{_call(case)}: the phase 'breaks' raised RuntimeError on its second call, but "
                                 f"find_bottleneck returned {rec['result']!r}: let a phase's exception reach the "
                                 "caller")
            expect(raised.get("propagated") is True and raised["type"] == "RuntimeError"
                   and "failed on purpose" in raised["message"],
                   f"{_call(case)}: the phase 'breaks' raised RuntimeError on its second call, but find_bottleneck "
                   f"raised {raised['type']}: {raised['message'][:120]}, not that exception itself: let the "
                   "phase's own exception reach the caller unchanged (do not catch it, or re-raise it with a bare "
                   "`raise`)")
            expect(not after.get("enabled") and after.get("fresh") is None,
                   f"{_call(case)}: after a phase raised, torch.profiler was still running "
                   f"({after.get('fresh') or 'recording'}): stop the profiler on every path "
                   "(`with profile(...) as prof:` does it)")
            continue
        expect(not after.get("enabled") and after.get("fresh") is None,
               f"{_call(case)}: torch.profiler was still running after find_bottleneck returned "
               f"({after.get('fresh') or 'recording'}): stop it before returning")
        steps, warmup = case["steps"], case["warmup"]
        calls = rec.get("calls", [])
        order = [call[0] for call in calls]
        expect(order == labels * (warmup + steps),
               f"{_call(case)} with phases {labels}: one step calls every phase once, in the dict's order, and "
               f"{warmup + steps} steps run in all; the phases were called in the order {order[:12]}"
               + (" ..." if len(order) > 12 else ""))
        for i, (label, recording, ranges, *_) in enumerate(calls):
            step = i // len(labels)
            if step < warmup:
                continue
            expect(recording is True,
                   f"{_call(case)}: phase {label!r} ran in measured step {step - warmup + 1} of {steps} while "
                   "torch.profiler was not recording: the last `steps` steps must run under the profiler")
            expect(label in ranges,
                   f"{_call(case)}: phase {label!r} ran in measured step {step - warmup + 1} outside "
                   f"record_function({label!r}) (ranges open around it: {ranges}): wrap each phase in a range "
                   "named by its own label")


CHECKS = AssignmentChecks(
    inputs=inputs,
    tests={
        "test_top_ops_ranking": top_ops_ranking,
        "test_top_ops_by": top_ops_by,
        "test_top_ops_edges": top_ops_edges,
        "test_find_bottleneck_slowest": find_bottleneck_slowest,
        "test_find_bottleneck_total": find_bottleneck_total,
        "test_find_bottleneck_warmup": find_bottleneck_warmup,
        "test_find_bottleneck_profiler": find_bottleneck_profiler,
    },
)
