"""Checks for 00_measure_first: seed_all (T002) and stable_softplus (T007)."""
from __future__ import annotations

import random

import numpy as np
import torch

from . import AssignmentChecks, Evidence, close, equal, expect, tensor, value

SEEDS = [123, 7, 2**32 - 1]


def inputs() -> dict:
    x32 = torch.cat([torch.linspace(-80, 100, 4001), torch.tensor([0.0, 1e-8, -1e-8, -30, -20, 30, 88, 89, 100])])
    x64 = torch.linspace(-700, 1000, 120, dtype=torch.float64).reshape(2, 3, 20)
    small = torch.tensor([[-40.0, -1e-3, 0.0], [1e-3, 5.0, 20.5]], dtype=torch.float64)
    return {"seed_all": {"seeds": SEEDS}, "stable_softplus": {"xs": [x32, x64, small]}}


def seed_reproducible(evidence: Evidence, inputs: dict) -> None:
    data = evidence.probe("seed_all")
    for seed, rec in zip(SEEDS, data["reproducible"], strict=True):
        rec = value(rec, f"seed_all({seed})")
        for key in ("random", "randint", "numpy", "torch", "torch_int"):
            a, b = rec["first"][key], rec["second"][key]
            if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
                equal(b, tensor(a, key), f"after seed_all({seed}) twice, the {key} draws differ")
            else:
                expect(a == b, f"after seed_all({seed}) twice, the {key} draws differ")
    for seed, rec in zip(SEEDS, data["fresh"], strict=True):
        rec = value(rec, f"seed_all({seed})")
        expect(rec["random"] == random.Random(seed).random(), f"seed_all({seed}) does not seed Python's random")
        equal(rec["numpy"], torch.from_numpy(np.random.RandomState(seed).rand(4)),
              f"seed_all({seed}) does not seed NumPy's global generator")
        equal(rec["torch"], torch.rand(4, generator=torch.Generator().manual_seed(seed)),
              f"seed_all({seed}) does not seed torch")


def seed_deterministic(evidence: Evidence, inputs: dict) -> None:
    flags = value(evidence.probe("seed_all")["flags"], "seed_all(0, deterministic=...)")
    expect(flags["on"] == [True, True, False], "deterministic=True must switch on torch.use_deterministic_algorithms "
           "and cudnn.deterministic, and switch the cuDNN autotuner (benchmark) off")
    expect(flags["off"] == [False, False], "deterministic=False must switch deterministic mode off again")
    expect(flags["default"] == [False, False], "the default must be deterministic=False")


def softplus(evidence: Evidence, inputs: dict, cases: slice) -> None:
    xs = inputs["stable_softplus"]["xs"]
    for x, rec in list(zip(xs, evidence.probe("stable_softplus"), strict=True))[cases]:
        what = f"stable_softplus on {x.dtype} input of shape {tuple(x.shape)}"
        rec = value(rec, what)
        result = tensor(rec["result"], what)
        expect(result.dtype == x.dtype and result.shape == x.shape, f"{what}: got {result.dtype} of shape "
               f"{tuple(result.shape)}; keep the input's dtype and shape")
        expect(bool(torch.isfinite(result).all()), f"{what}: the result has inf or NaN (overflow?)")
        equal(rec["input_after"], x, f"{what}: the input must not be modified")
        x64 = x.double()
        reference = torch.where(x64 > 0, x64 + torch.log1p(torch.exp(-x64)), torch.log1p(torch.exp(x64)))
        rtol = 1e-5 if x.dtype == torch.float32 else 1e-9
        close(result.double(), reference, f"{what}: log(1 + exp(x))", rtol=rtol, atol=0.0)


CHECKS = AssignmentChecks(
    assignment="00_measure_first",
    probe_module="measure_first",
    inputs=inputs,
    tests={
        "test_seed_all_reproducible": seed_reproducible,
        "test_seed_all_deterministic": seed_deterministic,
        "test_stable_softplus_float32": lambda ev, inp: softplus(ev, inp, slice(0, 1)),
        "test_stable_softplus_float64": lambda ev, inp: softplus(ev, inp, slice(1, 3)),
    },
)
