"""Probes for 00_measure_first (run in the sandbox; see common.py)."""
import copy
import pickle
import random

import numpy as np
import torch

from utils.simulated_cuda import simulate_cuda_rng, without_cuda  # bound before any student code runs

# The global generators, and what draws from them, bound before any student code runs.
_py, _np, _cpu = random._inst, np.random.mtrand._rand, torch.default_generator
_Generator, _rand, _randn = torch.Generator, torch.rand, torch.randn
_deepcopy, _dumps, _loads = copy.deepcopy, pickle.dumps, pickle.loads


def _draws(n):
    """n draws from each global generator, plus normal ones (their cached values are state too).
    The check repeats exactly these calls on freshly seeded generators of its own."""
    return {"random": [_py.random() for _ in range(n)] + [_py.gauss(0.0, 1.0)],
            "numpy": _np.rand(n).tolist() + _np.randn(n).tolist(),
            "torch": _rand(n, generator=_cpu).tolist() + _randn(n, generator=_cpu).tolist()}


def rng_states(namespace, inputs):
    save, restore = lookup(namespace, "save_rng_states"), lookup(namespace, "restore_rng_states")
    seeds, pre, n, junk = inputs["seeds"], inputs["pre"], inputs["n"], inputs["junk"]

    def start():  # seeded global generators, moved on a little (a run in progress)
        _py.seed(seeds[0])
        _np.seed(seeds[1])
        _cpu.manual_seed(seeds[2])
        _draws(pre)

    def restored():
        start()
        states = save()
        after_save = _draws(n)
        _draws(junk)
        restore(states)
        return {"type": type(states).__name__, "is_dict": isinstance(states, dict), "after_save": after_save,
                "after_restore": _draws(n)}

    def twice():
        start()
        states = save()
        _draws(junk)
        restore(states)
        first = _draws(n)
        _draws(junk)
        restore(states)
        return [first, _draws(n)]

    def independent():
        start()
        first = save()
        _draws(n)
        second = save()
        _draws(junk)
        restore(first)
        again_first = _draws(n)
        restore(second)
        return [again_first, _draws(n)]

    def copies():
        start()
        states = save()
        _draws(junk)
        restore(_deepcopy(states))
        from_deepcopy = _draws(n)
        _draws(junk)
        restore(_loads(_dumps(states)))
        return [from_deepcopy, _draws(n)]

    def gpus():  # two simulated GPUs; the probe keeps its own references to their generators
        generators = [_Generator().manual_seed(s) for s in inputs["device_seeds"]]
        with simulate_cuda_rng(generators=generators):
            start()
            for g, k in zip(generators, inputs["device_pre"], strict=True):
                _rand(k, generator=g)
            states = save()
            after_save = [_rand(n, generator=g).tolist() for g in generators]
            for g in generators:
                _rand(junk, generator=g)
            restore(states)
            after_restore = [_rand(n, generator=g).tolist() for g in generators]
        return {"after_save": after_save, "after_restore": after_restore}

    steps = (("restored", restored), ("twice", twice), ("independent", independent), ("copies", copies),
             ("gpus", gpus))
    with without_cuda():  # as on a machine without a GPU, whatever machine grades; gpus() adds two simulated ones
        return {name: attempt(step) for name, step in steps}


def stable_softplus(namespace, inputs):
    fn = lookup(namespace, "stable_softplus")

    def one(x):
        arg = x.clone()
        return {"result": plain(fn(arg)), "input_after": plain(arg)}

    def on_meta(shape):  # a device other than the CPU, without data: as on a GPU, the result must stay there
        y = fn(torch.zeros(shape, dtype=torch.float64, device="meta"))
        return {"device": str(getattr(y, "device", None)), "dtype": str(getattr(y, "dtype", None)),
                "shape": list(getattr(y, "shape", []))}

    return {"cases": [attempt(one, x) for x in inputs["xs"]], "meta": attempt(on_meta, inputs["meta_shape"]),
            "ops": attempt(torch_ops, fn, inputs["xs"][0].clone())}
