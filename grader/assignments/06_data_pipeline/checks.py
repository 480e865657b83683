"""Checks for 06_data_pipeline: make_loader (T078) and segment_indices (T085)."""
from __future__ import annotations

import torch

from grader.checking import AssignmentChecks, Evidence, Fail, expect, tensor, value

LENGTH, BATCH, WORKERS = 30, 4, 3
# The options a caller passes through **kwargs in the "options" run ("collate_fn": True stands for the
# probe's own collate_fn, which tags each batch with the process that collated it).
OPTIONS = {"collate_fn": True, "persistent_workers": False, "prefetch_factor": 3, "multiprocessing_context": "fork",
           "timeout": 120.0}
OPTIONS_TEXT = ("collate_fn=..., persistent_workers=False, prefetch_factor=3, multiprocessing_context='fork', "
                "timeout=120.0")
# name -> (num_workers, seed, epochs, interleave, options): "_a" and "_b" are two loaders made alike ("_b" with
# draws from torch's global generator before each epoch), "_other" uses another seed.
RUNS = {"workers_a": (WORKERS, 11, 2, False, {}), "workers_b": (WORKERS, 11, 2, True, {}),
        "workers_other": (WORKERS, 12, 1, False, {}),
        "main_a": (0, 11, 2, False, {}), "main_b": (0, 11, 2, True, {}), "main_other": (0, 12, 1, False, {}),
        "options": (1, 21, 2, False, OPTIONS)}
# Sizes where a boundary computed in floating point lands on the frame before: (30, 22) with k * (F / K)
# or NumPy's linspace, (16, 14) with torch.linspace in float32, (13, 11) with arange * (F / K) in float32,
# (1000003, 32) with float32 true division; (100, 3) and (10, 3) where the float centre (k + 0.5) * F / K
# is not the middle frame.
EVAL_CASES = [(50, 8), (48, 8), (7, 7), (31, 5), (100, 3), (9, 4), (1000, 16), (1, 1), (3, 8), (1, 4), (5, 9),
              (30, 22), (16, 14), (13, 11), (10, 3), (1000003, 32)]
SHORT_CASES = [(3, 8), (1, 4), (5, 9)]
TRAIN_CASES = [(50, 8), (10, 3), (17, 5), (64, 64), (23, 4), (30, 22), (16, 14), (13, 11)]
BAD_CASES = [(0, 4), (5, 0), (-3, 2)]
# (num_frames, num_segments, train) calls that must draw no random numbers
EVAL_QUIET = [(1000, 16, False), (30, 22, False), (7, 7, False)]
SHORT_QUIET = [(3, 8, True), (5, 9, True), (1, 4, True), (3, 8, False)]
DRAWS = 400
KEYS = {"index", "draw", "worker", "expected", "pid", "info"}


def inputs() -> dict:
    return {"make_loader": {"length": LENGTH, "batch_size": BATCH, "runs": RUNS},
            "segment_indices": {"eval_cases": EVAL_CASES, "short_cases": SHORT_CASES, "train_cases": TRAIN_CASES,
                                "bad_cases": BAD_CASES, "eval_quiet": EVAL_QUIET, "short_quiet": SHORT_QUIET,
                                "draws": DRAWS, "seed": 2024}}


# ---- make_loader -------------------------------------------------------------------------------

def _call(name: str) -> str:
    num_workers, seed, _, _, options = RUNS[name]
    return (f"make_loader(dataset, {BATCH}, num_workers={num_workers}, seed={seed}"
            + (f", {OPTIONS_TEXT})" if options else ")"))


def _run(evidence: Evidence, name: str) -> dict:
    what = _call(name)
    runs = value(evidence.probe("make_loader"), "make_loader")
    expect(type(runs) is dict and name in runs, f"{what}: no result came back")
    expect(runs.get("dataset_intact") is True, "make_loader must not change the dataset's class or its methods")
    run = value(runs[name], what)
    expect(type(run) is dict and run.get("type") == "DataLoader",
           f"{what} should return a torch.utils.data.DataLoader itself, got "
           f"{run.get('type') if type(run) is dict else run}")
    expect(run.get("dataset_class") is True, f"{what}: the dataset's class was changed")
    return run


def _epochs(evidence: Evidence, name: str) -> list[list[dict]]:
    """One run's epochs, after checking what every loader must do: default batches, shuffling, the
    workers asked for, and every draw taken from the dataset's own NumPy generator."""
    num_workers, seed, epochs, _, options = RUNS[name]
    what = _call(name)
    run = _run(evidence, name)
    if options:
        expect(run.get("collate") == "given", f"{what}: the collate_fn given in **kwargs did not reach the DataLoader")
    else:
        expect(run.get("collate") == "given", f"{what}: the batches were not collated by DataLoader's default "
               "collate_fn (make_loader should not set one of its own)")
    got = run.get("epochs")
    expect(type(got) is list and len(got) == epochs, f"{what}: could not iterate over {epochs} epoch(s)")
    keys = KEYS | ({"collated_in"} if options else set())
    sizes_wanted = [BATCH] * (LENGTH // BATCH) + ([LENGTH % BATCH] if LENGTH % BATCH else [])
    main = run.get("main")
    for number, epoch in enumerate(got, 1):
        expect(type(epoch) is list and all(type(b) is dict and set(b) == keys for b in epoch),
               f"{what}: the batches are not the dataset's samples collated into a dict")
        expect(all(type(b[k]) is list and all(type(v) is int for v in b[k]) for b in epoch for k in KEYS),
               f"{what}: the batches are not the default collated tensors")
        sizes = [len(b["index"]) for b in epoch]
        expect(all(len(b[k]) == len(b["index"]) for b in epoch for k in KEYS) and sizes == sizes_wanted,
               f"{what}, epoch {number}: batch sizes {sizes}, expected {sizes_wanted} ({LENGTH} samples, the last "
               f"batch kept)")
        order = _order(epoch)
        expect(sorted(order) == list(range(LENGTH)), f"{what}, epoch {number}: every sample should come exactly once")
        expect(order != list(range(LENGTH)), f"{what}, epoch {number}: the samples should be shuffled")
        samples = [{k: b[k][i] for k in KEYS} for b in epoch for i in range(len(b["index"]))]
        workers = {s["worker"] for s in samples}
        wanted = set(range(num_workers)) if num_workers else {-1}
        expect(workers == wanted, f"{what}, epoch {number}: batches came from workers {sorted(workers)}, expected "
               f"{sorted(wanted)} (use num_workers as given)")
        pids = {s["worker"]: set() for s in samples}
        for s in samples:
            pids[s["worker"]].add(s["pid"])
        expect(all(s["info"] == s["worker"] for s in samples)
               and all(len(p) == 1 for p in pids.values()) and len(set.union(*pids.values())) == len(pids)
               and ((main in pids.get(-1, set())) if not num_workers else main not in set.union(*pids.values())),
               f"{what}, epoch {number}: the samples were not drawn by {num_workers} worker processes"
               if num_workers else f"{what}, epoch {number}: with num_workers=0 the main process should draw")
        expect(all(s["expected"] != -1 for s in samples),
               f"{what}, epoch {number}: when a sample was drawn, dataset.rng was not a numpy.random.Generator "
               "(replace it only by another NumPy Generator, e.g. np.random.default_rng(...))")
        expect(all(s["draw"] == s["expected"] for s in samples),
               f"{what}, epoch {number}: the samples' draws are not the numbers dataset.rng gave: the augmentation "
               "must come from the dataset's own generator")
    return got


def _view(epoch: list[dict]) -> list[dict]:
    """What two loaders made alike must share: the order, the draws and the workers (not process ids)."""
    return [{k: b[k] for k in ("index", "draw", "worker")} for b in epoch]


def _draws(epoch: list[dict], worker: int | None = None) -> set[int]:
    return {d for b in epoch for d, w in zip(b["draw"], b["worker"]) if worker is None or w == worker}


def _order(epoch: list[dict]) -> list[int]:
    return [i for b in epoch for i in b["index"]]


def loader_reproducible(evidence: Evidence, inputs: dict) -> None:
    for prefix, label in (("workers", f"num_workers={WORKERS}"), ("main", "num_workers=0")):
        first, second = _epochs(evidence, f"{prefix}_a"), _epochs(evidence, f"{prefix}_b")
        run = _run(evidence, f"{prefix}_a")
        before, after = tensor(run["global_before"], "RNG state"), tensor(run["global_after"], "RNG state")
        expect(torch.equal(before, after), f"{label}: making the loader and iterating over it changed torch's global "
               "random state: make_loader should neither seed nor draw from torch's global generator (the order "
               "and the workers' seeds should come from a generator of its own)")
        for number, (a, b) in enumerate(zip(first, second), 1):
            expect(_order(a) == _order(b), f"{label}: two loaders made with the same seed visit the samples in "
                   f"different orders in epoch {number} when other code draws from torch's global generator "
                   "in between")
            expect(_view(a) == _view(b), f"{label}: two loaders made with the same seed draw different numbers in "
                   f"epoch {number} when other code draws from torch's global generator in between")


def loader_workers_differ(evidence: Evidence, inputs: dict) -> None:
    epoch = _epochs(evidence, "workers_a")[0]
    streams = [_draws(epoch, w) for w in range(WORKERS)]
    for i in range(WORKERS):
        for j in range(i + 1, WORKERS):
            expect(not streams[i] & streams[j], f"with num_workers={WORKERS}, workers {i} and {j} drew the same "
                   "numbers: each worker must re-seed its own copy of dataset.rng")
    for prefix, label in (("workers", f"num_workers={WORKERS}"), ("main", "num_workers=0")):
        one, other = _epochs(evidence, f"{prefix}_a")[0], _epochs(evidence, f"{prefix}_other")[0]
        expect(not _draws(one) & _draws(other), f"{label}: seed 11 and seed 12 drew the same numbers")
        expect(_order(one) != _order(other), f"{label}: seed 11 and seed 12 visit the samples in the same order")


def loader_epochs(evidence: Evidence, inputs: dict) -> None:
    # with the caller's persistent_workers=False each epoch starts new workers: they must not start alike
    # (a loader that refused those options fails test_make_loader_kwargs, not this one)
    options_ran = "error" not in evidence.probe("make_loader").get("options", {"error": ""})
    for name, label in (("workers_a", f"num_workers={WORKERS}"), ("main_a", "num_workers=0"),
                        *([("options", _call("options"))] if options_ran else [])):
        first, second = _epochs(evidence, name)
        expect(not _draws(first) & _draws(second), f"{label}: the second epoch repeated the first epoch's draws")
        expect(_order(first) != _order(second), f"{label}: the second epoch kept the first epoch's order")


def loader_kwargs(evidence: Evidence, inputs: dict) -> None:
    what = _call("options")
    first, second = _epochs(evidence, "options")
    attributes = _run(evidence, "options").get("attributes")
    expect(type(attributes) is dict and attributes.get("prefetch_factor") == OPTIONS["prefetch_factor"],
           f"{what}: prefetch_factor did not reach the DataLoader")
    expect(attributes.get("timeout") == OPTIONS["timeout"], f"{what}: timeout did not reach the DataLoader (every "
           "keyword argument goes to it, not only the ones this test names)")
    expect(attributes.get("persistent_workers") is False, f"{what}: the loader's persistent_workers is not the "
           "caller's False (keyword arguments must reach the DataLoader unchanged, over any default of yours)")
    for number, epoch in enumerate((first, second), 1):
        expect(all(b["collated_in"] in b["pid"] for b in epoch),
               f"{what}, epoch {number}: the given collate_fn did not run in the workers that drew the batches")
    pids = [{p for b in epoch for p in b["pid"]} for epoch in (first, second)]
    expect(not pids[0] & pids[1], f"{what}: the workers of the first epoch were kept for the second, although the "
           "caller asked for persistent_workers=False")


# ---- segment_indices ---------------------------------------------------------------------------

def _bounds(num_frames: int, num_segments: int) -> list[int]:
    return [k * num_frames // num_segments for k in range(num_segments + 1)]


def _expected_eval(num_frames: int, num_segments: int) -> list[int]:
    b = _bounds(num_frames, num_segments)
    if num_frames < num_segments:
        return b[:-1]
    return [b[k] + (b[k + 1] - b[k]) // 2 for k in range(num_segments)]


def _indices(data, what: str, num_frames: int, num_segments: int, rows: int | None = None) -> torch.Tensor:
    t = tensor(data, what)
    shape = (num_segments,) if rows is None else (rows, num_segments)
    expect(t.dtype == torch.int64, f"{what}: the indices should be int64, got {t.dtype}")
    expect(tuple(t.shape) == shape, f"{what}: shape {tuple(t.shape)}, expected {shape}")
    expect(bool(((t >= 0) & (t < num_frames)).all()), f"{what}: indices outside 0..{num_frames - 1}")
    return t


def _in_segments(t: torch.Tensor, what: str, num_frames: int, num_segments: int) -> None:
    b = torch.tensor(_bounds(num_frames, num_segments))
    inside = (t >= b[:-1]) & (t < b[1:])
    if not bool(inside.all()):
        s = int((~inside).nonzero()[0, -1])
        picked = sorted(set(t[..., s].flatten().tolist()) - set(range(int(b[s]), int(b[s + 1]))))
        raise Fail(f"{what}: segment {s} holds frames {int(b[s])}..{int(b[s + 1]) - 1}, but {picked[:5]} were drawn")


def _segment_data(evidence: Evidence) -> dict:
    data = value(evidence.probe("segment_indices"), "segment_indices")
    expect(type(data) is dict, "segment_indices: no result came back")
    return data


def _quiet(rec, cases, label: str) -> None:
    """The calls in ``cases`` drew no random numbers, from the generator given or the global one."""
    calls = ", ".join(f"segment_indices({f}, {k}, train={t})" for f, k, t in cases)
    rec = value(rec, calls)
    expect(type(rec) is dict, f"{calls}: no result came back")
    states = {k: tensor(v, "RNG state") for k, v in rec.items()}
    expect(torch.equal(states["gen_before"], states["gen_after"]),
           f"{label} drew random numbers from the generator passed to it ({calls}): it should draw none")
    expect(torch.equal(states["global_before"], states["global_mid"])
           and torch.equal(states["global_mid"], states["global_after"]),
           f"{label} drew random numbers from torch's global generator ({calls}): it should draw none")


def segment_eval(evidence: Evidence, inputs: dict) -> None:
    data = _segment_data(evidence)
    for (f, k), got in zip(EVAL_CASES, data["eval"], strict=True):
        what = f"segment_indices({f}, {k}, train=False)"
        t = _indices(value(got, what), what, f, k)
        want = _expected_eval(f, k)
        if t.tolist() != want:
            wrong = next(i for i, (a, b) in enumerate(zip(t.tolist(), want)) if a != b)
            raise Fail(f"{what}: frame {wrong} is {t.tolist()[wrong]}, expected {want[wrong]} (boundaries "
                       f"{_bounds(f, k)[wrong]} and {_bounds(f, k)[wrong + 1]}, in integer arithmetic)")
    for (f, k, train), got in zip([(f, k, t) for f, k in BAD_CASES for t in (False, True)], data["bad"], strict=True):
        rec = value(got, f"segment_indices({f}, {k}, train={train})")
        expect(rec["value_error"] is True, f"segment_indices({f}, {k}, train={train}) should raise ValueError, "
               + (f"raised {rec['raised']}" if rec["raised"] else "returned normally"))
    _quiet(data["eval_quiet"], EVAL_QUIET, "evaluation (train=False)")


def segment_train(evidence: Evidence, inputs: dict) -> None:
    data = _segment_data(evidence)
    for (f, k), got in zip(SHORT_CASES, data["short_train"], strict=True):
        what = f"segment_indices({f}, {k}, train=True)"
        t = _indices(value(got, what), what, f, k)
        expect(t.tolist() == _bounds(f, k)[:-1], f"{what}: a video shorter than its segments should give "
               f"{_bounds(f, k)[:-1]} in training too, got {t.tolist()}")
    _quiet(data["short_quiet"], SHORT_QUIET, "a video with fewer frames than segments")
    for (f, k), got in zip(TRAIN_CASES, data["train"], strict=True):
        what = f"{DRAWS} calls of segment_indices({f}, {k}, train=True, generator)"
        t = _indices(value(got, what), what, f, k, rows=DRAWS)
        _in_segments(t, what, f, k)
        b = _bounds(f, k)
        offsets = []
        for s in range(k):
            column = t[:, s] - b[s]
            counts = torch.bincount(column, minlength=b[s + 1] - b[s])
            expected = DRAWS / (b[s + 1] - b[s])
            expect(bool((counts > 0).all()), f"{what}: some frames of segment {s} were never drawn")
            expect(bool(((counts >= 0.5 * expected) & (counts <= 1.6 * expected)).all()),
                   f"{what}: the frames of segment {s} were not drawn uniformly (counts {counts.tolist()})")
            offsets.append(column.double())
        wide = [s for s in range(k) if b[s + 1] - b[s] >= 3]     # every pair, not only neighbours
        for i, s in enumerate(wide):
            for t in wide[i + 1:]:
                r = torch.corrcoef(torch.stack([offsets[s], offsets[t]]))[0, 1].item()
                expect(abs(r) < 0.3, f"{what}: the frames drawn in segments {s} and {t} go together "
                       f"(correlation {r:.2f}): draw each segment's frame independently")


def segment_generator(evidence: Evidence, inputs: dict) -> None:
    rec = value(_segment_data(evidence)["generator"], "segment_indices with a generator")
    expect(type(rec) is dict, "segment_indices with a generator: no result came back")
    names = ("seed_1", "seed_1_again", "seed_2", "advanced", "twin", "global_5", "global_5_again", "global_6",
             "global_5_advanced")
    got = {}
    for name in names:
        what = f"segment_indices(1000, 16, train=True) [{name}]"
        got[name] = _indices(rec[name], what, 1000, 16)
        _in_segments(got[name], what, 1000, 16)
    expect(torch.equal(got["seed_1"], got["seed_1_again"]), "the same generator seed should give the same frames")
    expect(not torch.equal(got["seed_1"], got["seed_2"]), "another generator seed should give other frames")
    state = {k: tensor(rec[k], "RNG state") for k in ("advanced_before", "advanced_after", "twin_after",
                                                      "state_before", "state_after")}
    expect(torch.equal(got["advanced"], got["twin"]) and torch.equal(state["advanced_after"], state["twin_after"]),
           "two generators in the same state (one seeded, one given that state with set_state) gave different "
           "frames: draw the random numbers from the generator itself")
    expect(not torch.equal(got["advanced"], got["seed_1"]),
           "a generator seeded with 1 that had already drawn numbers gave the frames of a fresh one: draw from the "
           "generator's current state, not from its seed")
    expect(not torch.equal(state["advanced_before"], state["advanced_after"]),
           "segment_indices(..., train=True, generator) did not draw from the generator")
    expect(torch.equal(state["state_before"], state["state_after"]),
           "with a generator, torch's global random state must not change")
    expect(torch.equal(got["global_5"], got["global_5_again"]),
           "without a generator, torch.manual_seed(5) should fix the frames (use the global generator)")
    expect(not torch.equal(got["global_5"], got["global_6"]),
           "without a generator, torch.manual_seed(5) and (6) should give other frames")
    expect(not torch.equal(got["global_5"], got["global_5_advanced"]),
           "without a generator, the frames should depend on the global generator's current state, not only on "
           "its seed")


CHECKS = AssignmentChecks(
    inputs=inputs,
    tests={
        "test_make_loader_reproducible": loader_reproducible,
        "test_make_loader_workers_differ": loader_workers_differ,
        "test_make_loader_epochs": loader_epochs,
        "test_make_loader_kwargs": loader_kwargs,
        "test_segment_indices_eval": segment_eval,
        "test_segment_indices_train": segment_train,
        "test_segment_indices_generator": segment_generator,
    },
)
