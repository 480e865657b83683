"""The same scores on a loaded machine: 09's find_bottleneck probes time phases that sleep, and a
sleep that overshoots can reorder close rows of an honest profile. The checks accept what the run's
own timings show, never less than the case's design."""
import multiprocessing
import os
import shutil
import tomllib

from grader import cli
from grader.autograde import autograde
from grader.checking import checks_module
from grader.course import ASSIGNMENTS_DIR
from submissions import LIMITS

AID = "09_profiling"
checks = checks_module(AID)
# the samples whose find_bottleneck reads a profile (right, or wrong by one clause), and the cheats
TIMED = ("correct", "other_style", "legacy_api", "no_warmup", "units_and_self", "any_row", "phase_major",
         "cheat_stopwatch", "cheat_own_ranges")


def _rec(case: dict, took: dict[str, float], answer: str) -> dict:
    """The probe's record of a case whose every call of a label took ``took[label]`` ms."""
    labels = [phase[0] for phase in case["phases"]]
    calls = []
    for _ in range(case["warmup"] + case["steps"]):
        for phase in case["phases"]:
            children = {name: float(ms) for name, ms in phase[4]}
            calls.append([phase[0], True, [phase[0]], {phase[0]: took[phase[0]], **children}])
    assert [c[0] for c in calls] == labels * (case["warmup"] + case["steps"])
    return {"result": answer, "calls": calls}


def test_a_row_that_really_ran_longest_is_accepted_and_nothing_else_is():
    case = checks.inputs()["find_bottleneck"]["cases"]["shared_helper"]   # load, augment: io 24 ms; model 36
    quiet = _rec(case, {"load": 24.2, "augment": 24.3, "model": 36.2}, "model")
    assert checks._accepted(case, quiet) == {"model"}
    # each 'load' call overshot by 14 ms on a loaded machine: its row is now the profile's largest
    loaded = _rec(case, {"load": 38.5, "augment": 24.3, "model": 36.2}, "load")
    assert checks._accepted(case, loaded) == {"model", "load"}
    # timings shorter than the sleeps asked for cannot be real: only the design counts
    forged = _rec(case, {"load": 38.5, "augment": 2.0, "model": 36.2}, "load")
    assert checks._accepted(case, forged) == {"model"}
    # the warm-up steps are not the profile's: a slow first call recorded anyway gains nothing
    warm = checks.inputs()["find_bottleneck"]["cases"]["warmup_one"]
    first = _rec(warm, {"build cache": 1.1, "steady work": 20.2}, "build cache")
    first["calls"][0][3]["build cache"] = 121.0
    assert checks._accepted(warm, first) == {"steady work"}


def _spin(stop) -> None:
    while not stop.is_set():
        pass


def test_timing_sensitive_samples_score_the_same_with_every_cpu_saturated(tmp_path):
    """Issue 31: at a load near 6 on 2 cores, no_warmup scored 6 instead of 7."""
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
        outcomes = autograde(tmp_path, AID, workers=2, report=lambda _: None, limits=LIMITS)
        load = os.getloadavg()[0]
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join()
    scores = {o.student.removeprefix("sample_"): o.score for o in outcomes}
    assert scores == {name: expected[name] for name in TIMED}, f"load average {load:.1f}"
