"""Probes for 06_data_pipeline (run in the sandbox after grader/probe_helpers.py)."""
import os

import numpy as np
import torch
from torch.utils.data import DataLoader, default_collate, get_worker_info

from utils.data import RandomDraws

# Bound before any student code runs, so that a patched torch, NumPy or os cannot answer for them.
_Generator, _manual_seed, _get_rng_state, _rand, _stack = (torch.Generator, torch.manual_seed, torch.get_rng_state,
                                                         torch.rand, torch.stack)
_Tensor, _tolist, _getpid, _worker_info, _collate = torch.Tensor, torch.Tensor.tolist, os.getpid, get_worker_info, \
    default_collate
_NpGenerator = np.random.Generator
_BIT_GENERATORS = (np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox, np.random.SFC64)
_DATASET_METHODS = {name: RandomDraws.__dict__[name] for name in ("__init__", "__len__", "__getitem__")}
_draw = _DATASET_METHODS["__getitem__"]
_TWINS = {}  # bit generator class -> a Generator that replays a copied state
_KEYS = ("index", "draw", "worker", "expected", "pid", "info")


def _next_draw(rng) -> int:
    """The number ``RandomDraws`` draws next from ``rng`` (replayed on a copy of its state, so
    ``rng`` itself is not touched), or -1 when ``rng`` is not a NumPy Generator."""
    if type(rng) is not _NpGenerator or type(rng.bit_generator) not in _BIT_GENERATORS:
        return -1
    kind = type(rng.bit_generator)
    if kind not in _TWINS:
        _TWINS[kind] = _NpGenerator(kind(0))
    twin = _TWINS[kind]
    twin.bit_generator.state = rng.bit_generator.state
    return int(twin.integers(2**62))


class _Draws(RandomDraws):
    """RandomDraws (the dataset the spec names), whose samples also say what ``self.rng`` was about
    to give (``expected``), which process drew them (``pid``) and which worker torch says ran
    (``info``): evidence that the draws come from the dataset's own NumPy generator."""

    def __getitem__(self, index):
        expected = _next_draw(self.__dict__.get("rng"))
        sample = _draw(self, index)
        info = _worker_info()
        sample.update(expected=expected, pid=_getpid(), info=-1 if info is None else info.id)
        return sample


_OUR_GETITEM = _Draws.__dict__["__getitem__"]


def _tagging_collate(samples):
    """The collate_fn passed through ``**kwargs``: default batches, plus the process that collated them."""
    batch = _collate(samples)
    batch["collated_in"] = _getpid()
    return batch


def _ints(value) -> list:
    if type(value) is not _Tensor:
        raise TypeError(f"a batch holds {type(value).__name__}, not a tensor")
    return [int(v) for v in _tolist(value)]


def _batch(batch) -> dict:
    if type(batch) is not dict:
        raise TypeError(f"a batch is a {type(batch).__name__}, not the default collated dict")
    out = {key: _ints(batch[key]) for key in _KEYS}
    if "collated_in" in batch:
        out["collated_in"] = int(batch["collated_in"])
    return out


def make_loader(namespace, inputs):
    fn = lookup(namespace, "make_loader")
    main = _getpid()

    def run(num_workers, seed, epochs, interleave, options):
        kwargs = dict(options)
        if "collate_fn" in kwargs:
            kwargs["collate_fn"] = _tagging_collate
        dataset = _Draws(inputs["length"], seed=0)
        before = _get_rng_state()
        loader = fn(dataset, inputs["batch_size"], num_workers, seed, **kwargs)
        if type(loader) is not DataLoader:
            return {"type": type(loader).__name__}
        record = {"type": "DataLoader", "main": main, "epochs": [],
                  "collate": "given" if loader.collate_fn is kwargs.get("collate_fn", _collate) else "other"}
        for _ in range(epochs):
            if interleave:
                _rand(3)  # other code draws from torch's global generator between epochs
            record["epochs"].append([_batch(b) for b in loader])
        if not interleave:
            record["global_before"], record["global_after"] = before, _get_rng_state()
        if options:
            record["attributes"] = {"prefetch_factor": loader.prefetch_factor,
                                    "persistent_workers": loader.persistent_workers, "timeout": loader.timeout}
        record["dataset_class"] = type(dataset) is _Draws
        del loader
        return record

    runs = {name: attempt(run, *spec) for name, spec in inputs["runs"].items()}
    runs["dataset_intact"] = (all(RandomDraws.__dict__.get(name) is method for name, method in _DATASET_METHODS.items())
                              and _Draws.__dict__.get("__getitem__") is _OUR_GETITEM)
    return runs


def segment_indices(namespace, inputs):
    fn = lookup(namespace, "segment_indices")

    def call(*args):
        return plain(fn(*args))

    def draws(num_frames, num_segments):
        generator = _Generator().manual_seed(inputs["seed"])
        rows = [fn(num_frames, num_segments, True, generator) for _ in range(inputs["draws"])]
        if not all(type(row) is _Tensor for row in rows):
            raise TypeError("segment_indices should return a torch.Tensor")
        return plain(_stack(rows))

    def bad(num_frames, num_segments, train):
        try:
            fn(num_frames, num_segments, train)
        except Exception as exc:
            return {"raised": type(exc).__name__, "value_error": isinstance(exc, ValueError)}
        return {"raised": None, "value_error": False}

    def quiet(cases):
        """The calls that must draw no random numbers: each case with a generator, then without;
        the generator's and the global states around them."""
        generator = _Generator().manual_seed(inputs["seed"])
        out = {"gen_before": generator.get_state(), "global_before": _get_rng_state()}
        for f, k, train in cases:
            fn(f, k, train, generator)
        out["gen_after"], out["global_mid"] = generator.get_state(), _get_rng_state()
        for f, k, train in cases:
            fn(f, k, train)
        out["global_after"] = _get_rng_state()
        return out

    def generator():
        out = {name: call(1000, 16, True, _Generator().manual_seed(seed))
               for name, seed in (("seed_1", 1), ("seed_1_again", 1), ("seed_2", 2))}
        before = _get_rng_state()
        advanced = _Generator().manual_seed(1)
        _rand(7, generator=advanced)                       # the same seed, another state
        twin = _Generator()
        twin.set_state(advanced.get_state())               # the same state, another seed history
        out["advanced_before"] = advanced.get_state()
        out["advanced"] = call(1000, 16, True, advanced)
        out["advanced_after"] = advanced.get_state()
        out["twin"] = call(1000, 16, True, twin)
        out["twin_after"] = twin.get_state()
        out["state_before"], out["state_after"] = before, _get_rng_state()
        for name, seed, skip in (("global_5", 5, 0), ("global_5_again", 5, 0), ("global_6", 6, 0),
                                 ("global_5_advanced", 5, 7)):
            _manual_seed(seed)
            if skip:
                _rand(skip)
            out[name] = call(1000, 16, True)
        return out

    return {
        "eval": [attempt(call, f, k, False) for f, k in inputs["eval_cases"]],
        "short_train": [attempt(call, f, k, True) for f, k in inputs["short_cases"]],
        "train": [attempt(draws, f, k) for f, k in inputs["train_cases"]],
        "bad": [attempt(bad, f, k, train) for f, k in inputs["bad_cases"] for train in (False, True)],
        "eval_quiet": attempt(quiet, inputs["eval_quiet"]),
        "short_quiet": attempt(quiet, inputs["short_quiet"]),
        "generator": attempt(generator),
    }
