"""Probes for 00_measure_first (run in the sandbox after grader/probe_helpers.py)."""
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
_TorchDispatchMode = __import__("torch.utils._python_dispatch", fromlist=["TorchDispatchMode"]).TorchDispatchMode
_tree_map, _tree_leaves = torch.utils._pytree.tree_map, torch.utils._pytree.tree_leaves


def _draws(n):
    """n draws from each global generator, plus normal ones (their cached values are state too).
    The check repeats exactly these calls on freshly seeded generators of its own."""
    return {"random": [_py.random() for _ in range(n)] + [_py.gauss(0.0, 1.0)],
            "numpy": _np.rand(n).tolist() + _np.randn(n).tolist(),
            "torch": _rand(n, generator=_cpu).tolist() + _randn(n, generator=_cpu).tolist()}


def rng_states(namespace, inputs):
    """The same steps on a machine without a GPU and on a simulated one with two GPUs: each step's
    draws from every generator (and, with the GPUs, from each GPU's generator under "gpus")."""
    save, restore = lookup(namespace, "save_rng_states"), lookup(namespace, "restore_rng_states")
    seeds, pre, n, junk = inputs["seeds"], inputs["pre"], inputs["n"], inputs["junk"]
    gpus = []  # the simulated GPUs' generators while the GPU steps run; the probe keeps its own references

    def draws(k):
        out = _draws(k)
        if gpus:
            out["gpus"] = [_rand(k, generator=g).tolist() for g in gpus]
        return out

    def start():  # seeded global generators (and GPU generators), moved on a little (a run in progress)
        _py.seed(seeds[0])
        _np.seed(seeds[1])
        _cpu.manual_seed(seeds[2])
        _draws(pre)
        for g, s, k in zip(gpus, inputs["device_seeds"], inputs["device_pre"]):
            g.manual_seed(s)
            _rand(k, generator=g)

    def restored():
        start()
        states = save()
        after_save = draws(n)
        draws(junk)
        restore(states)
        return {"type": type(states).__name__, "is_dict": isinstance(states, dict), "after_save": after_save,
                "after_restore": draws(n)}

    def twice():
        start()
        states = save()
        draws(junk)
        restore(states)
        first = draws(n)
        draws(junk)
        restore(states)
        return [first, draws(n)]

    def independent():
        start()
        first = save()
        draws(n)
        second = save()
        draws(junk)
        restore(first)
        again_first = draws(n)
        restore(second)
        return [again_first, draws(n)]

    def copies():
        start()
        states = save()
        draws(junk)
        restore(_deepcopy(states))
        from_deepcopy = draws(n)
        draws(junk)
        restore(_loads(_dumps(states)))
        return [from_deepcopy, draws(n)]

    steps = (("restored", restored), ("twice", twice), ("independent", independent), ("copies", copies))
    with without_cuda():  # as on a machine without a GPU, whatever machine grades; then two simulated GPUs on top
        results = {name: attempt(step) for name, step in steps}

        def with_gpus():
            gpus[:] = [_Generator().manual_seed(s) for s in inputs["device_seeds"]]
            with simulate_cuda_rng(generators=list(gpus)):
                return {name: attempt(step) for name, step in steps}

        results["gpus"] = attempt(with_gpus)
    return results


class _Values(_TorchDispatchMode):
    """Lets code that reads values run on the meta device (shapes, no data: it stands in for a GPU).
    First, recording, it runs the answer on CPU zeros and keeps what each operator returned; then,
    on meta zeros, an operator that fails there for want of data (``item()`` under ``if``, ``bool``,
    ``float``; ``nonzero``, ``equal``...) returns the CPU run's values instead, in the same order. So an
    answer that checks its input still runs to the end on meta, where a tensor it made on the CPU
    meets x's device. ``unanswered``: such an operator had no recorded counterpart (the runs parted):
    then the meta run cannot tell where the answer's tensors go."""

    def __init__(self, recorded=None):
        super().__init__()
        self.recorded, self.log, self.calls, self.unanswered = recorded, {}, {}, None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name, kwargs = str(func), kwargs or {}
        index = self.calls[name] = self.calls.get(name, -1) + 1
        if self.recorded is None:  # the CPU run: keep what the operator returned
            out = func(*args, **kwargs)
            self.log.setdefault(name, []).append(_tree_map(_summary, out))
            return out
        try:
            return func(*args, **kwargs)
        except (RuntimeError, NotImplementedError):
            # only an operator that ran wholly on meta (a 0-dim CPU tensor may join it, as on a GPU): a tensor
            # on the CPU with one on meta, or a copy to the CPU, is the answer's own error, as it is on a GPU
            devices = {a.device.type for a in _tree_leaves((args, kwargs))
                       if isinstance(a, torch.Tensor) and (a.dim() or a.device.type != "cpu")}
            devices |= {torch.device(kwargs["device"]).type} if kwargs.get("device") is not None else set()
            if devices != {"meta"}:
                raise
            past = self.recorded.get(name, [])
            if index >= len(past):
                self.unanswered = f"{name} (call {index + 1})"
                raise
            return _tree_map(_on_meta, past[index])


class _Shape:
    """A tensor the CPU run returned, by its shape and dtype (a leaf for tree_map, unlike a tuple)."""

    def __init__(self, t):
        self.shape, self.dtype = tuple(t.shape), t.dtype


def _summary(value):
    return _Shape(value) if isinstance(value, torch.Tensor) else value


def _on_meta(value):
    return torch.empty(value.shape, dtype=value.dtype, device="meta") if isinstance(value, _Shape) else value


def stable_softplus(namespace, inputs):
    fn = lookup(namespace, "stable_softplus")

    def one(x):
        arg = x.clone()
        return {"result": plain(fn(arg)), "input_after": plain(arg)}

    def on_meta(shape):  # a device other than the CPU, without data: as on a GPU, the result must stay there
        recording = _Values()
        with dynamo_left_unloaded(), recording:
            attempt(fn, torch.zeros(shape, dtype=torch.float64))
        replay = _Values(recording.log)
        try:
            with dynamo_left_unloaded(), replay:
                y = fn(torch.zeros(shape, dtype=torch.float64, device="meta"))
        except BaseException as exc:
            return {"error": f"{type(exc).__name__}: {exc}"[:2000], "unanswered": replay.unanswered}
        return {"device": str(getattr(y, "device", None)), "dtype": str(getattr(y, "dtype", None)),
                "shape": list(getattr(y, "shape", []))}

    return {"cases": [attempt(one, x) for x in inputs["xs"]], "meta": attempt(on_meta, inputs["meta_shape"]),
            "ops": attempt(torch_ops, fn, inputs["xs"][0].clone())}
