"""Checks for 06_data_pipeline: make_loader (T078) and segment_indices (T085)."""
from __future__ import annotations

import torch

from . import AssignmentChecks, Evidence, expect, tensor, value

LENGTH, BATCH, WORKERS = 30, 4, 3
# name -> (num_workers, seed, epochs); "_a" and "_b" are two loaders made alike, "_other" uses another seed.
RUNS = {"workers_a": (WORKERS, 11, 2), "workers_b": (WORKERS, 11, 2), "workers_other": (WORKERS, 12, 1),
        "main_a": (0, 11, 2), "main_b": (0, 11, 2), "main_other": (0, 12, 1)}
EVAL_CASES = [(50, 8), (48, 8), (7, 7), (31, 5), (100, 3), (9, 4), (1000, 16), (1, 1), (3, 8), (1, 4), (5, 9)]
SHORT_CASES = [(3, 8), (1, 4), (5, 9)]
TRAIN_CASES = [(50, 8), (10, 3), (17, 5), (64, 64), (23, 4)]
BAD_CASES = [(0, 4), (5, 0), (-3, 2)]
DRAWS = 400


def inputs() -> dict:
    return {"make_loader": {"length": LENGTH, "batch_size": BATCH, "runs": RUNS},
            "segment_indices": {"eval_cases": EVAL_CASES, "short_cases": SHORT_CASES, "train_cases": TRAIN_CASES,
                                "bad_cases": BAD_CASES, "draws": DRAWS, "seed": 2024}}


# ---- make_loader -------------------------------------------------------------------------------

def _epochs(evidence: Evidence, name: str) -> list[list[dict]]:
    """One run's epochs, after checking what every loader must do (batches, shuffling, workers)."""
    num_workers, seed, epochs = RUNS[name]
    what = f"make_loader(dataset, {BATCH}, num_workers={num_workers}, seed={seed})"
    runs = value(evidence.probe("make_loader"), "make_loader")
    expect(type(runs) is dict and name in runs, f"{what}: no result came back")
    expect(runs.get("dataset_intact") is True, "make_loader must not change the dataset's class (RandomDraws)")
    run = value(runs[name], what)
    expect(type(run) is dict and run.get("type") == "DataLoader",
           f"{what} should return a torch.utils.data.DataLoader, got {run.get('type') if type(run) is dict else run}")
    got = run.get("epochs")
    expect(type(got) is list and len(got) == epochs, f"{what}: could not iterate over {epochs} epoch(s)")
    sizes_wanted = [BATCH] * (LENGTH // BATCH) + ([LENGTH % BATCH] if LENGTH % BATCH else [])
    for number, epoch in enumerate(got, 1):
        expect(type(epoch) is list and all(type(b) is dict and set(b) == {"index", "draw", "worker"} for b in epoch),
               f"{what}: the batches do not hold the dataset's index, draw and worker")
        expect(all(type(b[k]) is list and all(type(v) is int for v in b[k]) for b in epoch for k in b),
               f"{what}: the batches are not the default collated tensors")
        sizes = [len(b["index"]) for b in epoch]
        expect(all(len(b["draw"]) == len(b["worker"]) == len(b["index"]) for b in epoch) and sizes == sizes_wanted,
               f"{what}, epoch {number}: batch sizes {sizes}, expected {sizes_wanted} ({LENGTH} samples, the last "
               f"batch kept)")
        order = [i for b in epoch for i in b["index"]]
        expect(sorted(order) == list(range(LENGTH)), f"{what}, epoch {number}: every sample should come exactly once")
        expect(order != list(range(LENGTH)), f"{what}, epoch {number}: the samples should be shuffled")
        workers = {w for b in epoch for w in b["worker"]}
        wanted = set(range(num_workers)) if num_workers else {-1}
        expect(workers == wanted, f"{what}, epoch {number}: batches came from workers {sorted(workers)}, expected "
               f"{sorted(wanted)} (use num_workers as given)")
    return got


def _draws(epoch: list[dict], worker: int | None = None) -> set[int]:
    return {d for b in epoch for d, w in zip(b["draw"], b["worker"]) if worker is None or w == worker}


def _order(epoch: list[dict]) -> list[int]:
    return [i for b in epoch for i in b["index"]]


def loader_reproducible(evidence: Evidence, inputs: dict) -> None:
    for prefix, label in (("workers", f"num_workers={WORKERS}"), ("main", "num_workers=0")):
        first, second = _epochs(evidence, f"{prefix}_a"), _epochs(evidence, f"{prefix}_b")
        for number, (a, b) in enumerate(zip(first, second), 1):
            expect(_order(a) == _order(b), f"{label}: two loaders made with the same seed visit the samples in "
                   f"different orders in epoch {number}")
            expect(a == b, f"{label}: two loaders made with the same seed draw different numbers in epoch {number}")


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
    for prefix, label in (("workers", f"num_workers={WORKERS}"), ("main", "num_workers=0")):
        first, second = _epochs(evidence, f"{prefix}_a")
        expect(not _draws(first) & _draws(second), f"{label}: the second epoch repeated the first epoch's draws")
        expect(_order(first) != _order(second), f"{label}: the second epoch kept the first epoch's order")


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


def _segment_data(evidence: Evidence) -> dict:
    data = value(evidence.probe("segment_indices"), "segment_indices")
    expect(type(data) is dict, "segment_indices: no result came back")
    return data


def segment_eval(evidence: Evidence, inputs: dict) -> None:
    data = _segment_data(evidence)
    for (f, k), got in zip(EVAL_CASES, data["eval"], strict=True):
        what = f"segment_indices({f}, {k}, train=False)"
        t = _indices(value(got, what), what, f, k)
        want = _expected_eval(f, k)
        expect(t.tolist() == want, f"{what} returned {t.tolist()[:20]}, expected {want[:20]}")
    for (f, k), got in zip(BAD_CASES, data["bad"], strict=True):
        rec = value(got, f"segment_indices({f}, {k}, ...)")
        expect(rec["value_error"] is True, f"segment_indices({f}, {k}, ...) should raise ValueError, "
               + (f"raised {rec['raised']}" if rec["raised"] else "returned normally"))


def segment_train(evidence: Evidence, inputs: dict) -> None:
    data = _segment_data(evidence)
    for (f, k), got in zip(SHORT_CASES, data["short_train"], strict=True):
        what = f"segment_indices({f}, {k}, train=True)"
        t = _indices(value(got, what), what, f, k)
        expect(t.tolist() == _bounds(f, k)[:-1], f"{what}: a video shorter than its segments should give "
               f"{_bounds(f, k)[:-1]} in training too, got {t.tolist()}")
    for (f, k), got in zip(TRAIN_CASES, data["train"], strict=True):
        what = f"{DRAWS} calls of segment_indices({f}, {k}, train=True, generator)"
        t = _indices(value(got, what), what, f, k, rows=DRAWS)
        b = _bounds(f, k)
        for s in range(k):
            column = t[:, s]
            expect(bool(((column >= b[s]) & (column < b[s + 1])).all()),
                   f"{what}: segment {s} holds frames {b[s]}..{b[s + 1] - 1}, but "
                   f"{sorted(set(column.tolist()) - set(range(b[s], b[s + 1])))[:5]} were drawn")
            counts = torch.bincount(column - b[s], minlength=b[s + 1] - b[s])
            expected = DRAWS / (b[s + 1] - b[s])
            expect(bool((counts > 0).all()), f"{what}: some frames of segment {s} were never drawn")
            expect(bool(((counts >= 0.5 * expected) & (counts <= 1.6 * expected)).all()),
                   f"{what}: the frames of segment {s} were not drawn uniformly (counts {counts.tolist()})")


def segment_generator(evidence: Evidence, inputs: dict) -> None:
    rec = value(_segment_data(evidence)["generator"], "segment_indices with a generator")
    expect(type(rec) is dict, "segment_indices with a generator: no result came back")
    got = {name: _indices(rec[name], f"segment_indices(1000, 16, train=True) [{name}]", 1000, 16)
           for name in ("seed_1", "seed_1_again", "seed_2", "global_5", "global_5_again", "global_6")}
    expect(torch.equal(got["seed_1"], got["seed_1_again"]), "the same generator seed should give the same frames")
    expect(not torch.equal(got["seed_1"], got["seed_2"]), "another generator seed should give other frames")
    before, after = tensor(rec["state_before"], "RNG state"), tensor(rec["state_after"], "RNG state")
    expect(torch.equal(before, after), "with a generator, torch's global random state must not change")
    expect(torch.equal(got["global_5"], got["global_5_again"]),
           "without a generator, torch.manual_seed(5) should fix the frames (use the global generator)")
    expect(not torch.equal(got["global_5"], got["global_6"]),
           "without a generator, torch.manual_seed(5) and (6) should give other frames")


CHECKS = AssignmentChecks(
    assignment="06_data_pipeline",
    probe_module="data_pipeline",
    inputs=inputs,
    tests={
        "test_make_loader_reproducible": loader_reproducible,
        "test_make_loader_workers_differ": loader_workers_differ,
        "test_make_loader_epochs": loader_epochs,
        "test_segment_indices_eval": segment_eval,
        "test_segment_indices_train": segment_train,
        "test_segment_indices_generator": segment_generator,
    },
)
