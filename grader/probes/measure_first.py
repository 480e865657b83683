"""Probes for 00_measure_first (run in the sandbox; see common.py)."""
import random

import numpy as np
import torch


def _draws():
    return {"random": random.random(), "randint": random.randint(0, 10**6), "numpy": torch.from_numpy(np.random.rand(3)),
            "torch": torch.rand(3), "torch_int": torch.randint(0, 100, (3,))}


def seed_all(namespace, inputs):
    fn = lookup(namespace, "seed_all")

    def reproducible(seed):
        fn(seed)
        first = _draws()
        random.random(), np.random.rand(5), torch.rand(5)  # draws in between must not matter
        fn(seed)
        return {"first": first, "second": _draws()}

    def against_fresh_generators(seed):
        fn(seed)
        return {"random": random.random(), "numpy": torch.from_numpy(np.random.rand(4)), "torch": torch.rand(4)}

    def flags():
        cudnn, out = torch.backends.cudnn, {}
        try:
            cudnn.benchmark = True
            fn(0, deterministic=True)
            out["on"] = [torch.are_deterministic_algorithms_enabled(), cudnn.deterministic, cudnn.benchmark]
            fn(0, deterministic=False)
            out["off"] = [torch.are_deterministic_algorithms_enabled(), cudnn.deterministic]
            fn(0, deterministic=True)
            fn(0)
            out["default"] = [torch.are_deterministic_algorithms_enabled(), cudnn.deterministic]
        finally:
            torch.use_deterministic_algorithms(False)
            cudnn.deterministic, cudnn.benchmark = False, False
        return out

    return {"reproducible": [attempt(reproducible, s) for s in inputs["seeds"]],
            "fresh": [attempt(against_fresh_generators, s) for s in inputs["seeds"]],
            "flags": attempt(flags)}


def stable_softplus(namespace, inputs):
    fn = lookup(namespace, "stable_softplus")

    def one(x):
        arg = x.clone()
        return {"result": plain(fn(arg)), "input_after": plain(arg)}

    return [attempt(one, x) for x in inputs["xs"]]
