"""The same scores on a loaded machine: 09's find_bottleneck probes time phases that sleep, and a
sleep that overshoots, or a process that waits for a core, can reorder close rows of an honest
profile. The checks accept any label whose row could have been the largest by the probe's own clock,
never less than the case's design; whether the warm-up was recorded comes from the spies."""
import multiprocessing
import os
import shutil
import tomllib

import pytest

from grader import cli
from grader.autograde import autograde
from grader.checking import checks_module
from grader.course import ASSIGNMENTS_DIR

pytestmark = pytest.mark.busy  # every core saturated on purpose

AID = "09_profiling"
checks = checks_module(AID)
# the samples whose find_bottleneck reads a profile (right, or wrong by one clause), and the cheats
TIMED = ("correct", "other_style", "legacy_api", "no_warmup", "units_and_self", "any_row", "phase_major",
         "cheat_stopwatch", "cheat_own_ranges")


def _rec(case: dict, took: dict[str, float], answer: str, gap: float = 0.05, after: dict | None = None,
         recording: bool = True) -> dict:
    """The probe's record of a case whose every call of a label took ``took[label]`` ms, one after the
    other, ``gap`` ms apart, plus ``after[label]`` ms once each call of that label has ended (the
    process waiting for a core as the range closes, unseen by the phase's own clock)."""
    calls, clock = [], 1000.0
    for step in range(case["warmup"] + case["steps"]):
        for phase in case["phases"]:
            label, children = phase[0], {name: float(ms) for name, ms in phase[4]}
            start, clock = clock, clock + took[label]
            calls.append([label, recording or step >= case["warmup"], [label], {label: took[label], **children},
                          [start, clock]])
            clock += gap + (after or {}).get(label, 0.0)
    return {"result": answer, "calls": calls, "window": [999.0, clock + 1.0]}


def test_a_row_that_could_have_been_the_largest_is_accepted_and_nothing_else_is():
    case = checks.inputs()["find_bottleneck"]["cases"]["shared_helper"]   # load, augment: io 24 ms; model 36
    quiet = _rec(case, {"load": 24.2, "augment": 24.3, "model": 36.2}, "model")
    assert checks._accepted(case, quiet) == {"model"}
    # each 'load' call overshot by 14 ms on a loaded machine: its row is now the profile's largest
    loaded = _rec(case, {"load": 38.5, "augment": 24.3, "model": 36.2}, "load")
    assert checks._accepted(case, loaded) == {"model", "load"}
    # the process waited 15 ms for a core after each 'load' call, before its range closed: the phase's
    # clock missed it, the profile did not (on a loaded CI machine, 09's reference blamed such a row);
    # the wait may as well have been the next range's, augment's, as it opened
    waited = _rec(case, {"load": 24.2, "augment": 24.3, "model": 36.2}, "load", after={"load": 15.0})
    assert checks._accepted(case, waited) == {"model", "load", "augment"}
    # timings shorter than the sleeps asked for cannot be real: only the design counts
    forged = _rec(case, {"load": 38.5, "augment": 2.0, "model": 36.2}, "load")
    assert checks._accepted(case, forged) == {"model"}


def test_recording_the_warm_up_is_seen_from_the_spies_whatever_the_load():
    warm = checks.inputs()["find_bottleneck"]["cases"]["warmup_one"]
    right = _rec(warm, {"build cache": 1.1, "steady work": 20.2}, "steady work", recording=False)
    right["calls"][0][3]["build cache"] = 121.0                 # the slow first call, in the warm-up step
    assert checks._accepted(warm, right) == {"steady work"} and not checks._recorded_warmup(warm, right)
    wrong = _rec(warm, {"build cache": 1.1, "steady work": 20.2}, "steady work", recording=True)
    assert checks._recorded_warmup(warm, wrong)


def _spin(stop) -> None:
    while not stop.is_set():
        pass


def test_timing_sensitive_samples_score_the_same_with_every_cpu_saturated(tmp_path):
    """Once, at a load near 6 on 2 cores, no_warmup scored 6 instead of 7."""
    assert cli.main(["samples", "--assignment", AID, "--course-dir", str(tmp_path)]) == 0
    for folder in (tmp_path / "submitted").iterdir():
        if folder.name.removeprefix("sample_") not in TIMED:
            shutil.rmtree(folder)
    expected = tomllib.loads((ASSIGNMENTS_DIR / AID / "scores.toml").read_text())
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,)) for _ in range(3 * (os.cpu_count() or 1))]
    for spinner in spinners:
        spinner.start()
    try:
        outcomes = autograde(tmp_path, AID, workers=2, report=lambda _: None)  # the default limits, as graders use
        load = os.getloadavg()[0]
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join()
    scores = {o.student.removeprefix("sample_"): o.score for o in outcomes}
    assert scores == {name: expected[name] for name in TIMED}, f"load average {load:.1f}"
