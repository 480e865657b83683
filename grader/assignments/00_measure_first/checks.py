"""Checks for 00_measure_first: save_rng_states / restore_rng_states (T002) and stable_softplus (T007).

save_rng_states / restore_rng_states (Exercise 1) clauses and where each is checked; "without a GPU" is
the probe's without_cuda(), "with GPUs" its simulate_cuda_rng() machine with two GPUs on top of it:
  1 save returns a dict (its keys are the answer's choice) ......................................... rng_restore
  2 after save, draws, restore: Python's random, NumPy's global generator and torch's CPU generator
    repeat the draws that followed the save, normal draws (gauss, randn and their caches) included . rng_restore
  3 with GPUs, the generator of every GPU repeats too (not only the current one), and the global
    generators still do .............................................................................. rng_all_gpus
  4 saving only reads: the draws after it are those that would have come without it
    (without a GPU: rng_restore; every GPU's and the globals' with GPUs: rng_all_gpus)
  5 a snapshot is a copy: restoring it twice works, two snapshots taken at different points are
    independent (no shared, refilled state), without a GPU and with GPUs, each GPU's part included:
    checked with GPUs on the generators that one restore brings back there, so that forgetting a
    generator costs only clause 3 ............................................................... rng_snapshot
  6 a snapshot still works after copy.deepcopy and after a pickle round trip (also with GPUs) ..... rng_snapshot
  7 both functions work on a machine without a GPU (any error there) ................................ rng_restore
stable_softplus (Exercise 2) clauses:
  1 float32, every x in [-80, 100]: relative error <= 1e-5 against float64 (a grid every 0.045 plus
    0, +-1e-8, -30, -20, 30, 88, 89, 100) .................................................. softplus_float32
  2 float64, every x in [-700, 1000]: relative error <= 1e-9: besides the visible grid, a dense one
    (every 0.05, and every 0.001 on [-50, 50]), where a cut-off (x itself above t, exp(x) below -t)
    fails for any t under about 18 or 20 ..................................................... softplus_float64
  3 never inf or nan on those ranges ...................................... softplus_float32, softplus_float64
  4 shape and dtype of x (1-D, 2-D and 3-D inputs) ........................ softplus_float32, softplus_float64
    device of x: a float64 call on the meta device (it stands in for a GPU) returns a meta tensor;
    an answer that reads values there (checks its input with item(), bool, nonzero...) gets, in
    order, the values the same call read on CPU zeros (probe's _Values), so it runs to the end and
    a tensor it made on the CPU meets x's device. Only where the two runs part (the answer read a
    value on meta that the CPU run did not) does the meta call decide nothing; an error the answer
    raises itself on meta fails ..................................................... softplus_float64
  5 x not modified (every case) ........................................... softplus_float32, softplus_float64
  6 elementary operations, no ready-made softplus (F.softplus, nn.Softplus, the aten operator, under
    DisableTorchFunction: the ATen operators that ran, from the profiler) .......................... softplus_float32
"""
from __future__ import annotations

import random

import numpy as np
import torch

from grader.checking import AssignmentChecks, Evidence, equal, expect, tensor, value

# Seeds and draw counts for the rng_states probe: the global generators are seeded, moved on by
# `pre` draws, then saved, drawn from and restored; two simulated GPUs start from `device_seeds`.
RNG = {"seeds": [2024, 7, 123456789], "pre": 5, "n": 3, "junk": 4, "device_seeds": [101, 202], "device_pre": [3, 6]}
LIBRARIES = {"random": "Python's random", "numpy": "NumPy's global generator", "torch": "torch's CPU generator"}


def inputs() -> dict:
    x32 = torch.cat([torch.linspace(-80, 100, 4001), torch.tensor([0.0, 1e-8, -1e-8, -30, -20, 30, 88, 89, 100])])
    x64 = torch.linspace(-700, 1000, 120, dtype=torch.float64).reshape(2, 3, 20)
    small = torch.tensor([[-40.0, -1e-3, 0.0], [1e-3, 5.0, 20.5]], dtype=torch.float64)
    # The whole float64 range, densely: every 0.05 from -700 to 1000 and every 0.001 from -50 to 50, where a
    # cut-off (x itself above some t, exp(x) below some -t) costs more than 1e-9 if t is under about 20.
    dense = torch.cat([torch.linspace(-700, 1000, 34001, dtype=torch.float64),
                       torch.linspace(-50, 50, 100001, dtype=torch.float64)])
    return {"rng_states": RNG, "stable_softplus": {"xs": [x32, x64, small, dense], "meta_shape": [2, 3, 4]}}


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


def _gpu_blocks(*counts) -> list[list[list[float]]]:
    """Per block, what each simulated GPU's generator draws next after its seed and its first draws."""
    generators = []
    for seed, k in zip(RNG["device_seeds"], RNG["device_pre"], strict=True):
        g = torch.Generator().manual_seed(seed)
        torch.rand(k, generator=g)
        generators.append(g)
    return [[torch.rand(k, generator=g).tolist() for g in generators] for k in counts]


WITH_GPUS = "on a simulated machine with two GPUs, "


def _working(evidence: Evidence) -> tuple[list[str], list[int]]:
    """The generators that one save and restore brings back on the simulated machine with two GPUs
    (global libraries, GPU indices): the snapshot's other rules are checked on those, so that an
    answer that forgets a generator loses only the test of that rule."""
    gpus = value(evidence.probe("rng_states")["gpus"], WITH_GPUS + "save_rng_states / restore_rng_states")
    rec = gpus["restored"]
    if not isinstance(rec, dict) or set(rec) == {"error"}:
        return [], []
    want = _blocks(RNG["pre"], RNG["n"])[1]
    libraries = [key for key in LIBRARIES if rec["after_restore"].get(key) == want[key]]
    block = _gpu_blocks(RNG["n"])[0]
    got = rec["after_restore"].get("gpus") or []
    return libraries, [i for i, expected in enumerate(block) if i < len(got) and got[i] == expected]


def _compare_gpus(got, want: dict, gpu_want: list, working: tuple, problem: str) -> None:
    """``got``'s draws against the expected ones, for the generators in ``working`` only."""
    libraries, indices = working
    expect(type(got) is dict and isinstance(got.get("gpus"), list), "the grader received no draws")
    for key in libraries:
        expect(got.get(key) == want[key], WITH_GPUS + problem.format(LIBRARIES[key]))
    for i in indices:
        expect(i < len(got["gpus"]) and got["gpus"][i] == gpu_want[i], WITH_GPUS + problem.format(f"GPU {i}'s generator"))


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
    # The same rules on a simulated machine with two GPUs, for every generator that one restore brings back
    # there (test_rng_states_all_gpus grades the others): the GPUs' part of a snapshot is a copy too.
    working = _working(evidence)
    if not any(working):
        return
    gpus = value(data["gpus"], WITH_GPUS + "save_rng_states / restore_rng_states")
    gpu_blocks = _gpu_blocks(RNG["n"], RNG["n"])
    once, twice = value(gpus["twice"], WITH_GPUS + "restoring one snapshot twice")
    _compare_gpus(once, blocks[1], gpu_blocks[0], working, "after restore_rng_states(s), {} does not repeat the draws "
                  "that followed s = save_rng_states()")
    _compare_gpus(twice, blocks[1], gpu_blocks[0], working, "restoring the same snapshot a second time does not "
                  "bring {} back: restore_rng_states must not use up or change the snapshot")
    first, second = value(gpus["independent"], WITH_GPUS + "two snapshots taken one after the other")
    _compare_gpus(first, blocks[1], gpu_blocks[0], working, "with two snapshots taken at different points, restoring "
                  "the first does not bring {} back to the first point: each save_rng_states() call must return a "
                  "new, independent snapshot")
    _compare_gpus(second, blocks[2], gpu_blocks[1], working, "with two snapshots taken at different points, "
                  "restoring the second does not bring {} back to the second point")
    deep, pickled = value(gpus["copies"], WITH_GPUS + "restoring a copied snapshot (copy.deepcopy, pickle)")
    _compare_gpus(deep, blocks[1], gpu_blocks[0], working, "restoring a copy.deepcopy of the snapshot does not "
                  "bring {} back")
    _compare_gpus(pickled, blocks[1], gpu_blocks[0], working, "restoring a snapshot that went through pickle (as it "
                  "does in a checkpoint file) does not bring {} back")


def rng_all_gpus(evidence: Evidence, inputs: dict) -> None:
    gpus = value(evidence.probe("rng_states")["gpus"], WITH_GPUS + "save_rng_states / restore_rng_states")
    rec = value(gpus["restored"], WITH_GPUS + "save_rng_states / restore_rng_states")
    want = _gpu_blocks(RNG["n"])[0]
    after_save, after_restore = rec["after_save"].get("gpus"), rec["after_restore"].get("gpus")
    expect(type(after_save) is list and type(after_restore) is list and len(after_save) == len(after_restore)
           == len(want), "the grader received no draws")
    for i, (got, expected) in enumerate(zip(after_save, want)):
        expect(got == expected, f"{WITH_GPUS}save_rng_states() changed what GPU {i}'s "
               "generator draws next: saving must only read the states")
    wrong = [i for i, (got, expected) in enumerate(zip(after_restore, want)) if got != expected]
    expect(len(wrong) < len(want), f"{WITH_GPUS}no GPU's generator repeats its draws after "
           "restore_rng_states(s): when CUDA is available, save and restore the generator of every GPU")
    expect(not wrong, f"{WITH_GPUS}GPU {wrong[0] if wrong else ''}'s generator does not "
           "repeat its draws after restore_rng_states(s): save and restore the generator of every GPU, not only the "
           "current one")
    # Python's, NumPy's and torch's CPU generators on that machine too, where they work without a GPU (where
    # they do not, test_rng_states_restore grades it)
    plain = evidence.probe("rng_states")["restored"]
    blocks = _blocks(RNG["pre"], RNG["n"])
    for key, name in LIBRARIES.items():
        if isinstance(plain, dict) and isinstance(plain.get("after_restore"), dict) and \
                plain["after_restore"].get(key) == blocks[1][key] and plain["after_save"].get(key) == blocks[1][key]:
            expect(rec["after_save"].get(key) == blocks[1][key], f"{WITH_GPUS}save_rng_states() changed what {name} "
                   "draws next: saving must only read the states")
            expect(rec["after_restore"].get(key) == blocks[1][key], f"{WITH_GPUS}{name} does not repeat its draws "
                   "after restore_rng_states(s)")


def softplus(evidence: Evidence, inputs: dict, cases: slice) -> None:
    xs = inputs["stable_softplus"]["xs"]
    for x, rec in list(zip(xs, evidence.probe("stable_softplus")["cases"], strict=True))[cases]:
        what = f"stable_softplus on {x.dtype} input of shape {tuple(x.shape)}"
        rec = value(rec, what)
        result = tensor(rec["result"], what)
        expect(result.dtype == x.dtype and result.shape == x.shape, f"{what}: got {result.dtype} of shape "
               f"{tuple(result.shape)}; keep the input's dtype and shape")
        expect(bool(torch.isfinite(result).all()), f"{what}: the result has inf or NaN (overflow?) for x = "
               f"{x[~torch.isfinite(result)][:3].tolist()}")
        equal(rec["input_after"], x, f"{what}: the input must not be modified")
        x64 = x.double()
        reference = torch.where(x64 > 0, x64 + torch.log1p(torch.exp(-x64)), torch.log1p(torch.exp(x64)))
        rtol = 1e-5 if x.dtype == torch.float32 else 1e-9
        error = ((result.double() - reference).abs() / reference).flatten()  # softplus is > 0 on these ranges
        worst = int(error.argmax())
        expect(bool(error[worst] <= rtol), f"{what}: log(1 + exp(x)) is off by a relative {error[worst].item():.2g} "
               f"at x = {x.flatten()[worst].item():.6g}, more than the {rtol:g} the statement allows")


def softplus_float32(evidence: Evidence, inputs: dict) -> None:
    softplus(evidence, inputs, slice(0, 1))
    names = value(evidence.probe("stable_softplus")["ops"], "stable_softplus on float32 input")["names"]
    expect("softplus" not in names, "stable_softplus calls a ready-made softplus (F.softplus or nn.Softplus): "
                                    "build it from elementary operations such as torch.exp, torch.log1p, torch.clamp")


def softplus_float64(evidence: Evidence, inputs: dict) -> None:
    softplus(evidence, inputs, slice(1, 4))
    rec = evidence.probe("stable_softplus")["meta"]
    shape = tuple(inputs["stable_softplus"]["meta_shape"])
    what = f"stable_softplus on a float64 tensor of shape {shape} on the meta device"
    if isinstance(rec, dict) and "error" in rec and rec.get("unanswered"):
        # the answer read values on meta that the run on the CPU did not (the two runs parted): it cannot tell
        return
    expect(isinstance(rec, dict) and "error" not in rec, f"{what} (meta stands in for a GPU: keep every tensor on "
           f"x.device): your code raised {str(rec.get('error') if isinstance(rec, dict) else rec)[:300]}")
    expect(rec["device"] == "meta", f"{what} returned a result on {rec['device']}: keep every tensor on x.device")
    expect(rec["dtype"] == "torch.float64" and tuple(rec["shape"]) == shape,
           f"{what}: got {rec['dtype']} of shape {tuple(rec['shape'])}; keep the input's dtype and shape")


CHECKS = AssignmentChecks(
    inputs=inputs,
    tests={
        "test_rng_states_restore": rng_restore,
        "test_rng_states_snapshot": rng_snapshot,
        "test_rng_states_all_gpus": rng_all_gpus,
        "test_stable_softplus_float32": softplus_float32,
        "test_stable_softplus_float64": softplus_float64,
    },
)
