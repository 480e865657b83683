"""Probes for 06_data_pipeline (run in the sandbox; see common.py)."""
import torch
from torch.utils.data import DataLoader

from utils.data import RandomDraws

_KEYS = ("index", "draw", "worker")
# Bound before any student code runs, so that a patched torch cannot answer for them.
_Generator, _manual_seed, _get_rng_state = torch.Generator, torch.manual_seed, torch.get_rng_state
_DATASET_METHODS = {name: RandomDraws.__dict__[name] for name in ("__init__", "__len__", "__getitem__")}


def _ints(values):
    return [int(v) for v in values]


def make_loader(namespace, inputs):
    fn = lookup(namespace, "make_loader")

    def run(num_workers, seed, epochs):
        loader = fn(RandomDraws(inputs["length"], seed=0), inputs["batch_size"], num_workers, seed)
        if not isinstance(loader, DataLoader):
            return {"type": type(loader).__name__}
        out = []
        for _ in range(epochs):
            out.append([{key: _ints(batch[key].tolist()) for key in _KEYS} for batch in loader])
        return {"type": "DataLoader", "epochs": out}

    runs = {name: attempt(run, *spec) for name, spec in inputs["runs"].items()}
    runs["dataset_intact"] = all(RandomDraws.__dict__.get(name) is method for name, method in _DATASET_METHODS.items())
    return runs


def segment_indices(namespace, inputs):
    fn = lookup(namespace, "segment_indices")

    def call(*args):
        return plain(fn(*args))

    def draws(num_frames, num_segments):
        generator = _Generator().manual_seed(inputs["seed"])
        rows = [fn(num_frames, num_segments, True, generator) for _ in range(inputs["draws"])]
        if not all(type(row) is torch.Tensor for row in rows):
            raise TypeError("segment_indices should return a torch.Tensor")
        return plain(torch.stack(rows))

    def bad(num_frames, num_segments):
        try:
            fn(num_frames, num_segments, False)
        except Exception as exc:
            return {"raised": type(exc).__name__, "value_error": isinstance(exc, ValueError)}
        return {"raised": None, "value_error": False}

    def generator():
        out = {name: call(1000, 16, True, _Generator().manual_seed(seed))
               for name, seed in (("seed_1", 1), ("seed_1_again", 1), ("seed_2", 2))}
        before = _get_rng_state()
        fn(1000, 16, True, _Generator().manual_seed(3))
        out["state_before"], out["state_after"] = before, _get_rng_state()
        for name, seed in (("global_5", 5), ("global_5_again", 5), ("global_6", 6)):
            _manual_seed(seed)
            out[name] = call(1000, 16, True)
        return out

    return {
        "eval": [attempt(call, f, k, False) for f, k in inputs["eval_cases"]],
        "short_train": [attempt(call, f, k, True) for f, k in inputs["short_cases"]],
        "train": [attempt(draws, f, k) for f, k in inputs["train_cases"]],
        "bad": [attempt(bad, f, k) for f, k in inputs["bad_cases"]],
        "generator": attempt(generator),
    }
