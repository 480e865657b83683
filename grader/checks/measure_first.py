"""Checks for 00_measure_first: save_rng_states / restore_rng_states (T002) and stable_softplus (T007)."""
from __future__ import annotations

import random

import numpy as np
import torch

from . import AssignmentChecks, Evidence, close, equal, expect, needs_data, tensor, value

# Seeds and draw counts for the rng_states probe: the global generators are seeded, moved on by
# `pre` draws, then saved, drawn from and restored; two simulated GPUs start from `device_seeds`.
RNG = {"seeds": [2024, 7, 123456789], "pre": 5, "n": 3, "junk": 4, "device_seeds": [101, 202], "device_pre": [3, 6]}
LIBRARIES = {"random": "Python's random", "numpy": "NumPy's global generator", "torch": "torch's CPU generator"}


def inputs() -> dict:
    x32 = torch.cat([torch.linspace(-80, 100, 4001), torch.tensor([0.0, 1e-8, -1e-8, -30, -20, 30, 88, 89, 100])])
    x64 = torch.linspace(-700, 1000, 120, dtype=torch.float64).reshape(2, 3, 20)
    small = torch.tensor([[-40.0, -1e-3, 0.0], [1e-3, 5.0, 20.5]], dtype=torch.float64)
    return {"rng_states": RNG, "stable_softplus": {"xs": [x32, x64, small], "meta_shape": [2, 3, 4]}}


def _draws(py, npr, gen, n):
    """The probe's draws, repeated here on generators the check owns."""
    return {"random": [py.random() for _ in range(n)] + [py.gauss(0.0, 1.0)],
            "numpy": npr.rand(n).tolist() + npr.randn(n).tolist(),
            "torch": torch.rand(n, generator=gen).tolist() + torch.randn(n, generator=gen).tolist()}


def _blocks(*counts) -> list[dict]:
    """Successive blocks of draws from freshly seeded generators: what each library draws next."""
    a, b, c = RNG["seeds"]
    generators = random.Random(a), np.random.RandomState(b), torch.Generator().manual_seed(c)
    return [_draws(*generators, k) for k in counts]


def _compare(got, want: dict, problem: str) -> None:
    expect(type(got) is dict, "the grader received no draws")
    for key, name in LIBRARIES.items():
        expect(got.get(key) == want[key], problem.format(name))


def rng_restore(evidence: Evidence, inputs: dict) -> None:
    rec = value(evidence.probe("rng_states")["restored"], "save_rng_states / restore_rng_states (on a machine "
                "without a GPU)")
    expect(rec["is_dict"] is True, f"save_rng_states() should return a dict, got {str(rec['type'])[:60]}")
    want = _blocks(RNG["pre"], RNG["n"])[1]
    _compare(rec["after_save"], want, "save_rng_states() changed what {} draws next: saving must only read the states")
    _compare(rec["after_restore"], want, "after restore_rng_states(s), {} does not repeat the draws that followed "
             "s = save_rng_states()")


def rng_snapshot(evidence: Evidence, inputs: dict) -> None:
    data = evidence.probe("rng_states")
    blocks = _blocks(RNG["pre"], RNG["n"], RNG["n"])
    once, twice = value(data["twice"], "restoring one snapshot twice")
    _compare(once, blocks[1], "after restore_rng_states(s), {} does not repeat the draws that followed "
             "s = save_rng_states()")
    _compare(twice, blocks[1], "restoring the same snapshot a second time does not bring {} back: "
             "restore_rng_states must not use up or change the snapshot")
    first, second = value(data["independent"], "two snapshots taken one after the other")
    _compare(first, blocks[1], "with two snapshots taken at different points, restoring the first does not bring {} "
             "back to the first point: each save_rng_states() call must return a new, independent snapshot")
    _compare(second, blocks[2], "with two snapshots taken at different points, restoring the second does not bring "
             "{} back to the second point")
    deep, pickled = value(data["copies"], "restoring a copied snapshot (copy.deepcopy, pickle)")
    _compare(deep, blocks[1], "restoring a copy.deepcopy of the snapshot does not bring {} back")
    _compare(pickled, blocks[1], "restoring a snapshot that went through pickle (as it does in a checkpoint file) "
             "does not bring {} back")


def rng_all_gpus(evidence: Evidence, inputs: dict) -> None:
    rec = value(evidence.probe("rng_states")["gpus"], "save_rng_states / restore_rng_states on a simulated machine "
                "with two GPUs")
    want = []
    for seed, k in zip(RNG["device_seeds"], RNG["device_pre"], strict=True):
        g = torch.Generator().manual_seed(seed)
        torch.rand(k, generator=g)
        want.append(torch.rand(RNG["n"], generator=g).tolist())
    expect(len(rec["after_save"]) == len(rec["after_restore"]) == len(want), "the grader received no draws")
    for i, (got, expected) in enumerate(zip(rec["after_save"], want)):
        expect(got == expected, f"on a simulated machine with two GPUs, save_rng_states() changed what GPU {i}'s "
               "generator draws next: saving must only read the states")
    wrong = [i for i, (got, expected) in enumerate(zip(rec["after_restore"], want)) if got != expected]
    expect(len(wrong) < len(want), "on a simulated machine with two GPUs, no GPU's generator repeats its draws after "
           "restore_rng_states(s): when CUDA is available, save and restore the generator of every GPU")
    expect(not wrong, f"on a simulated machine with two GPUs, GPU {wrong[0] if wrong else ''}'s generator does not "
           "repeat its draws after restore_rng_states(s): save and restore the generator of every GPU, not only the "
           "current one")


def softplus(evidence: Evidence, inputs: dict, cases: slice) -> None:
    xs = inputs["stable_softplus"]["xs"]
    for x, rec in list(zip(xs, evidence.probe("stable_softplus")["cases"], strict=True))[cases]:
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



def softplus_float32(evidence: Evidence, inputs: dict) -> None:
    softplus(evidence, inputs, slice(0, 1))
    names = value(evidence.probe("stable_softplus")["ops"], "stable_softplus on float32 input")["names"]
    expect("softplus" not in names, "stable_softplus calls a ready-made softplus (F.softplus or nn.Softplus): "
                                    "build it from elementary operations such as torch.exp, torch.log1p, torch.clamp")


def softplus_float64(evidence: Evidence, inputs: dict) -> None:
    softplus(evidence, inputs, slice(1, 3))
    rec = evidence.probe("stable_softplus")["meta"]
    if needs_data(rec):
        return  # the answer reads values, which meta tensors do not hold: this case cannot tell
    shape = tuple(inputs["stable_softplus"]["meta_shape"])
    what = f"stable_softplus on a float64 tensor of shape {shape} on the meta device"
    rec = value(rec, what + " (meta stands in for a GPU: keep every tensor on x.device)")
    expect(rec["device"] == "meta", f"{what} returned a result on {rec['device']}: keep every tensor on x.device")
    expect(rec["dtype"] == "torch.float64" and tuple(rec["shape"]) == shape,
           f"{what}: got {rec['dtype']} of shape {tuple(rec['shape'])}; keep the input's dtype and shape")


CHECKS = AssignmentChecks(
    assignment="00_measure_first",
    probe_module="measure_first",
    inputs=inputs,
    tests={
        "test_rng_states_restore": rng_restore,
        "test_rng_states_snapshot": rng_snapshot,
        "test_rng_states_all_gpus": rng_all_gpus,
        "test_stable_softplus_float32": softplus_float32,
        "test_stable_softplus_float64": softplus_float64,
    },
)
