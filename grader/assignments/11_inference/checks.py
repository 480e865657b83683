"""Checks for 11_inference: batched_predict (T102, T106) and export_and_reload (T104, T102).

Every clause of the two specifications in the notebook has a check here that fails when that clause
alone is broken, on evidence from the run (see probes.py beside this file):

batched_predict
  outputs   one output per request, in order, equal to the eval-mode model's; the requests' dtype
            (bfloat16, float64) and device (a default device other than theirs) kept;
  batches   consecutive batches of max_batch requests, one call each, the batch as the model's
            2-D input; no call for an empty list;
  modes     every call in eval mode (every layer) and inside inference_mode, whichever mode the
            model came in;
  restores  the model's mode as it came, after a return and after the model raises (whose exception
            reaches the caller unchanged); inference and grad mode as before (also when the caller is
            in no_grad or inference_mode); the global RNG neither
            seeded nor drawn from; parameters, buffers and requires_grad unchanged.
export_and_reload
  matches   a program made by torch.export that computes the eval-mode model, and the model left in
            its mode (training, eval, and when export raises, whose error reaches the caller unchanged);
  file      the file at path holds the program, and the returned program is the one read back from it
            (the probe's torch.export.save writes marked weights, which only a program loaded from the
            file computes with), so it no longer depends on the model (whose weights are then zeroed);
  dynamic   dimension 0 dynamic with dynamic_batch (any batch size, 1 and 1500 included), the example's
            batch size only without it.
Each check first asks for the work itself (the model's answers, a program made by torch.export), so
an answer that does nothing, or fakes what the other checks look at, earns nothing.
"""
from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from grader.checking import AssignmentChecks, Evidence, Fail, close, expect, probe_definitions, value

FEATURES = 12
DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}
TOLERANCE = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-9), "bfloat16": (2e-2, 2e-2)}


def _bn_state(model: nn.Module) -> dict:
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.running_mean.uniform_(-1.0, 1.0)      # learned statistics, so that eval mode matters
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return {k: v.clone() for k, v in model.state_dict().items()}


def _probes() -> dict:
    return probe_definitions(Path(__file__).parent)


def inputs() -> dict:
    torch.manual_seed(1111)
    scorer = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    exported = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 4))
    mlp = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4))
    cases = [{"requests": (torch.randn(n, FEATURES) * 2 + 0.5).to(DTYPES[dtype]), "seed": 4000 + i}
             for i, (n, _, _, dtype, _) in enumerate(_probes()["BATCHED_CASES"])]
    return {
        "batched_predict": {"state": _bn_state(scorer), "requests": torch.randn(10, FEATURES) * 2 + 0.5,
                            "cases": cases},
        "export_and_reload": {
            "bn_state": _bn_state(exported),
            "mlp_state": {k: v.clone() for k, v in mlp.state_dict().items()},
            "example": torch.randn(8, 10),
            "new": torch.randn(8, 10) * 1.5,
            "batches": {str(b): torch.randn(b, 10) for b in _probes()["EXPORT_BATCHES"]},
        },
    }


# ---- batched_predict ---------------------------------------------------------------------------

def _describe(n: int, max_batch: int, training: bool, dtype: str, default) -> str:
    what = f"batched_predict with {n} {dtype + ' ' if dtype != 'float32' else ''}requests and max_batch={max_batch}"
    what += f", the model handed over in {'training' if training else 'eval'} mode"
    if default:
        what += f", while torch's default device is {default!r} (as where the default device is a GPU)"
    return what


def _wanted(inputs: dict, spec: dict, max_batch: int, dtype: str) -> list[torch.Tensor]:
    """The eval-mode model's answer to each request, batch by batch as the spec says."""
    model = _probes()["_scorer"](inputs["batched_predict"]["state"]).to(DTYPES[dtype]).eval()
    rows = spec["requests"]
    with torch.no_grad():
        return [row for start in range(0, len(rows), max_batch) for row in model(rows[start:start + max_batch])]


def _cases(evidence: Evidence, inputs: dict, plain: bool):
    """(key, description, record, expected outputs) for every case; with ``plain`` only the float32 ones
    on the usual default device (the other clauses are checked there, apart from dtype and device)."""
    data = value(evidence.probe("batched_predict"), "batched_predict")
    specs = inputs["batched_predict"]["cases"]
    for key, spec, rec in zip(_probes()["BATCHED_CASES"], specs, data["cases"], strict=True):
        n, max_batch, training, dtype, default = key
        if plain and (dtype != "float32" or default):
            continue
        what = _describe(*key)
        yield key, what, value(rec, what), _wanted(inputs, spec, max_batch, dtype)


def _matches(got, want, dtype: str) -> bool:
    rtol, atol = TOLERANCE[dtype]
    return (type(got) is torch.Tensor and got.shape == want.shape and got.dtype == want.dtype
            and torch.allclose(got.double(), want.double(), rtol=rtol, atol=atol))


def _answered(what: str, rec: dict, want: list) -> None:
    """The positive control of every check but the outputs one: the answer returned the model's answers
    (in any order), so it did the work whose manner the check then looks at."""
    outputs = rec["outputs"]  # a list, or a tuple (returning a list is the outputs test's clause)
    left = list(range(len(want)))
    if type(outputs) is list and len(outputs) == len(want):
        for got in outputs:
            match = next((i for i in left if _matches(got, want[i], "float32")), None)
            if match is None:
                break
            left.remove(match)
    expect(type(outputs) is list and len(outputs) == len(want) and not left,
           f"{what}: the answer did not return the eval-mode model's answers (see the outputs test), "
           "so this test cannot credit how it got them")


def batched_outputs(evidence: Evidence, inputs: dict) -> None:
    for (n, _, _, dtype, default), what, rec, want in _cases(evidence, inputs, plain=False):
        outputs = rec["outputs"]
        expect(rec["kind"] == "list", f"{what}: should return a list, got a {rec['kind']}")
        expect(len(outputs) == n, f"{what}: expected one output per request ({n}), got {len(outputs)}")
        for i, (got, expected) in enumerate(zip(outputs, want)):
            detail = rec["details"][i] if i < len(rec["details"] or []) else None
            label = f"{what}: output {i}"
            if detail and detail["device"] != "cpu":
                raise Fail(f"{label} is on {detail['device']}, not on the requests' device (cpu): build each batch "
                           "from the requests themselves (torch.stack keeps their device), not with a factory "
                           "function that uses the default device")
            if type(got) is torch.Tensor and got.dtype != expected.dtype:
                raise Fail(f"{label} has dtype {got.dtype}, expected {expected.dtype}: keep the requests' dtype, "
                           "do not convert the batch or the answers")
            rtol, atol = TOLERANCE[dtype]
            close(got, expected, f"{label} (the eval-mode model's answer to request {i}, in order)",
                  rtol=rtol, atol=atol)


def _sizes(n: int, max_batch: int) -> list[int]:
    return [min(max_batch, n - start) for start in range(0, n, max_batch)]


def batched_batches(evidence: Evidence, inputs: dict) -> None:
    specs = {key: spec for key, spec in zip(_probes()["BATCHED_CASES"], inputs["batched_predict"]["cases"])}
    for key, what, rec, want in _cases(evidence, inputs, plain=True):
        n, max_batch = key[0], key[1]
        calls = rec["calls"]
        expect(all(call["type"] == "Tensor" for call in calls),
               f"{what}: the model should get one tensor per call, it got {[call['type'] for call in calls]}")
        shapes = [call["shape"] for call in calls]
        expect(all(len(s) == 2 and s[1] == FEATURES for s in shapes),
               f"{what}: every call should get a 2-D (batch, {FEATURES}) tensor; the model got shapes {shapes}")
        sizes = [s[0] for s in shapes]
        expect(len(sizes) == math.ceil(n / max_batch) and sizes == _sizes(n, max_batch),
               f"{what}: the model was called with batches of {sizes}, expected {_sizes(n, max_batch)}"
               + (" (no call at all for an empty list)" if n == 0 else ""))
        requests = specs[key]["requests"]
        for index, (call, start) in enumerate(zip(calls, range(0, n, max_batch))):
            rows = call.get("rows")
            expect(type(rows) is torch.Tensor and torch.equal(rows, requests[start:start + max_batch]),
                   f"{what}: batch {index} should hold requests {start} to {min(start + max_batch, n) - 1}, "
                   "in order (consecutive batches)")
        _answered(what, rec, want)


def batched_modes(evidence: Evidence, inputs: dict) -> None:
    for (n, _, _, _, _), what, rec, want in _cases(evidence, inputs, plain=True):
        calls = rec["calls"]
        seen = sum(call["shape"][0] for call in calls if call.get("shape"))
        expect(seen == n, f"{what}: the model should see every request once (it saw {seen} rows)")
        expect(not any(any(call["modes"]) for call in calls),
               f"{what}: the model (and every layer in it) must be in eval mode during each call")
        expect(all(call["inference"] for call in calls), f"{what}: every call must run inside torch.inference_mode()")
        _answered(what, rec, want)


def _mode_words(modes: list) -> str:
    return "training mode" if all(modes) else "eval mode" if not any(modes) else "a mix of modes"


def _autograd_words(state: dict) -> str:
    return f"inference mode {'on' if state['inference'] else 'off'}, grad mode {'on' if state['grad'] else 'off'}"


def _modes_restored(what: str, rec: dict, when: str, advice: str) -> None:
    """The model's mode, inference mode and grad mode as they were before the call."""
    expect(rec["modes_after"] == rec["modes_before"],
           f"{what}: the model came in {_mode_words(rec['modes_before'])} and left in "
           f"{_mode_words(rec['modes_after'])}; {advice}")
    expect(rec["autograd_after"] == rec["autograd_before"],
           f"{what}: {when}, inference mode and grad mode must be what they were before the call "
           f"({_autograd_words(rec['autograd_before'])}), found {_autograd_words(rec['autograd_after'])}: "
           "switch them with context managers (with torch.inference_mode():), not by setting them")


def batched_restores(evidence: Evidence, inputs: dict) -> None:
    for _, what, rec, want in _cases(evidence, inputs, plain=True):
        _modes_restored(what, rec, "after the call", "it must leave in the mode it came in")
        expect(rec["state_same"] is True, f"{what}: the model's parameters or buffers (values, dtypes or "
               "requires_grad) changed: batched_predict must not modify the model")
        expect(rec["rng_same"] is True, f"{what}: torch's global random number generator changed: "
               "batched_predict must neither seed it nor draw from it")
        _answered(what, rec, want)
    data = value(evidence.probe("batched_predict"), "batched_predict")
    for (n, max_batch, training, kind), rec in zip(_probes()["RAISING_CASES"], data["raising"], strict=True):
        raised = ("a BaseException that is not an Exception (as KeyboardInterrupt is)" if kind == "interrupt"
                  else "an exception")
        what = (f"batched_predict with {n} requests and max_batch={max_batch}, the model handed over in "
                f"{'training' if training else 'eval'} mode and raising {raised} on its second call")
        rec = value(rec, what)
        expect(len(rec["calls"]) >= 2, f"{what}: the model was called {len(rec['calls'])} time(s), "
               "so the call that raises was never reached")
        expect(rec["raised"] is not None, f"{what}: batched_predict returned normally; the model's exception must "
               "reach the caller")
        expect(rec["propagated"] is True, f"{what}: batched_predict raised {rec['raised']}; the model's own "
               "exception must reach the caller unchanged (restore the mode in a finally block)")
        _modes_restored(what, rec, "after the exception", "restore its mode on every path (try/finally)")
    for (n, max_batch, training, context), rec in zip(_probes()["CALLER_CASES"], data["caller"], strict=True):
        what = (f"batched_predict with {n} requests and max_batch={max_batch}, the model handed over in "
                f"{'training' if training else 'eval'} mode, called inside the caller's torch.{context}()")
        _modes_restored(what, value(rec, what), "after the call", "it must leave in the mode it came in")


# ---- export_and_reload -------------------------------------------------------------------------

def _reference(definition: str, state: dict, x: torch.Tensor) -> torch.Tensor:
    model = _probes()[definition](state).eval()
    with torch.no_grad():
        return model(x)


def _marked(state: dict) -> dict:
    mark = _probes()["MARK"]
    return {k: v + mark if v.is_floating_point() else v for k, v in state.items()}


def _exported(program: dict, what: str) -> None:
    expect(program["exported"] is True,
           f"{what} is not a module made by torch.export (got a {program['type']}): export the model with "
           "torch.export.export and return the .module() of the program loaded back with torch.export.load")


def _round_trip(evidence: Evidence, what: str) -> dict:
    return value(evidence.probe("export_and_reload")["round_trip"], what)


def export_matches(evidence: Evidence, inputs: dict) -> None:
    data = inputs["export_and_reload"]
    what = "export_and_reload on a model with BatchNorm and Dropout, handed over in training mode"
    rec = _round_trip(evidence, what)
    _exported(rec["program"], f"{what}: the returned object")
    expect(all(rec["modes_after"]), f"{what}: the model came in training mode and must leave in training mode")
    wants = [_reference("_export_model", state, data["new"]) for state in (data["bn_state"], _marked(data["bn_state"]))]
    for call in ("first", "second"):
        got = value(rec[call], f"{what}: calling the returned program")
        label = f"{what}: the returned program, {'called' if call == 'first' else 'called again'} on new inputs"
        if not any(_matches(got, want, "float32") for want in wants):
            close(got, wants[0], f"{label}, should answer like the model in eval mode (export it in eval mode)",
                  rtol=1e-4, atol=1e-5)
    raising = value(evidence.probe("export_and_reload")["raising"],
                    "export_and_reload on a model export cannot capture")
    expect(raising["raised"] is not None, "export_and_reload on a model whose forward raises returned normally: "
           "the error torch.export.export raises must reach the caller")
    expect(raising.get("propagated") is True, f"export_and_reload on a model whose forward raises raised "
           f"{raising['raised']}, not the error torch.export.export raised: let that error reach the caller unchanged "
           "(do not catch it, or re-raise it with a bare `raise`)")
    expect(all(raising["modes_after"]), "export_and_reload on a model whose forward raises, handed over in training "
           "mode: the model was left in eval mode; restore its mode on every path (try/finally)")
    dynamic = value(evidence.probe("export_and_reload")["dynamic"], "export_and_reload on a plain MLP in eval mode")
    for modes in dynamic["modes_after"]:
        expect(not any(modes), "export_and_reload on a model handed over in eval mode left it in "
               f"{_mode_words(modes)}: leave the model in the mode it came in")


def export_file(evidence: Evidence, inputs: dict) -> None:
    what = "export_and_reload on a model with BatchNorm and Dropout"
    rec = _round_trip(evidence, what)
    _exported(rec["program"], f"{what}: the returned object")
    found = rec["file"]
    expect(found is not None, f"{what}: there is no file at path: save the program there with torch.export.save")
    found = value(found, f"{what}: loading the file at path with torch.export.load")
    from_file = value(found["file"], f"{what}: the program in the file at path, called on new inputs")
    returned = value(found["returned"], f"{what}: the returned program, called on new inputs")
    expect(type(from_file) is torch.Tensor and type(returned) is torch.Tensor,
           f"{what}: the program in the file and the returned one should both answer with a tensor")
    if returned.shape == from_file.shape and torch.allclose(returned, torch.zeros_like(returned)) \
            and not torch.allclose(from_file, torch.zeros_like(from_file)):
        raise Fail(f"{what}: the returned program answers with the weights the model holds now (they were set to "
                   "zero after the call): it must be the program read back from path, which no longer depends on "
                   "the model")
    expect(returned.shape == from_file.shape and torch.allclose(returned, from_file, rtol=1e-4, atol=1e-5),
           f"{what}: the returned program does not answer like the program in the file at path: return the "
           ".module() of the program loaded back from that file with torch.export.load, not the one in memory")


def export_dynamic(evidence: Evidence, inputs: dict) -> None:
    data = inputs["export_and_reload"]
    rec = value(evidence.probe("export_and_reload")["dynamic"], "export_and_reload on a plain MLP")
    _exported(rec["fixed_program"], "export_and_reload(model, example, path): the returned object")
    _exported(rec["dynamic_program"], "export_and_reload(..., dynamic_batch=True): the returned object")
    batches = data["batches"]
    close(value(rec["fixed_same"], "the default program at the example's batch size"),
          _reference("_plain_mlp", data["mlp_state"], batches["8"]),
          "the default program at the example's batch size", rtol=1e-4, atol=1e-5)
    for size, x in batches.items():
        got = value(rec["dynamic"].get(size, {"error": "no result"}),
                    f"with dynamic_batch=True, the program on a batch of {size}")
        close(got, _reference("_plain_mlp", data["mlp_state"], x),
              f"with dynamic_batch=True, the program on a batch of {size} (declare dimension 0 dynamic, "
              "without bounds)", rtol=1e-4, atol=1e-5)
    if rec["fixed_other_raised"] is not True:
        raise Fail("without dynamic_batch the program should refuse another batch size: was a dynamic dimension "
                   "declared anyway?")
    bounds = value(rec["upper_bounds"], "the program saved with dynamic_batch=True, loaded with torch.export.load")
    expect(bounds == ["int_oo"], "with dynamic_batch=True the saved program's sizes are bounded above by "
           f"{', '.join(b for b in bounds if b != 'int_oo') or 'nothing dynamic'}: declare dimension 0 dynamic "
           "without bounds (no max=)")


CHECKS = AssignmentChecks(
    inputs=inputs,
    tests={
        "test_batched_predict_outputs": batched_outputs,
        "test_batched_predict_batches": batched_batches,
        "test_batched_predict_modes": batched_modes,
        "test_batched_predict_restores": batched_restores,
        "test_export_and_reload_matches": export_matches,
        "test_export_and_reload_file": export_file,
        "test_export_and_reload_dynamic": export_dynamic,
    },
)
