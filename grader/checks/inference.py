"""Checks for 11_inference: batched_predict (T102, T106) and export_and_reload (T104)."""
from __future__ import annotations

import math

import torch
from torch import nn

from . import AssignmentChecks, Evidence, Fail, close, expect, probe_definitions, value

FEATURES = 12


def _bn_state(model: nn.Module) -> dict:
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.running_mean.uniform_(-1.0, 1.0)      # learned statistics, so that eval mode matters
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return {k: v.clone() for k, v in model.state_dict().items()}


def inputs() -> dict:
    torch.manual_seed(1111)
    scorer = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))
    exported = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 4))
    mlp = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4))
    return {
        "batched_predict": {"state": _bn_state(scorer), "requests": torch.randn(10, FEATURES) * 2 + 0.5},
        "export_and_reload": {
            "bn_state": _bn_state(exported),
            "mlp_state": {k: v.clone() for k, v in mlp.state_dict().items()},
            "example": torch.randn(8, 10),
            "new": torch.randn(8, 10) * 1.5,
            "batches": {str(b): torch.randn(b, 10) for b in (1, 3, 8, 17)},
        },
    }


# ---- batched_predict ---------------------------------------------------------------------------

def _cases(evidence: Evidence) -> dict:
    cases = value(evidence.probe("batched_predict"), "batched_predict")
    names = probe_definitions("inference")["BATCHED_CASES"]
    result = {}
    for n, max_batch, training in names:
        what = f"batched_predict with {n} requests and max_batch={max_batch}"
        result[(n, max_batch, training)] = (what, value(cases[f"{n},{max_batch},{training}"], what))
    return result


def batched_outputs(evidence: Evidence, inputs: dict) -> None:
    data = inputs["batched_predict"]
    reference = probe_definitions("inference")["_scorer"](data["state"]).eval()
    with torch.no_grad():
        want = reference(data["requests"])
    for (n, _, _), (what, rec) in _cases(evidence).items():
        outputs = rec["outputs"]
        expect(type(outputs) is list, f"{what}: should return a list, got {outputs}")
        expect(len(outputs) == n, f"{what}: expected one output per request ({n}), got {len(outputs)}")
        for i, got in enumerate(outputs):
            close(got, want[i], f"{what}: output {i} (the eval-mode model's answer to request {i})",
                  rtol=1e-4, atol=1e-5)


def _sizes(n: int, max_batch: int) -> list[int]:
    return [min(max_batch, n - start) for start in range(0, n, max_batch)]


def batched_batches(evidence: Evidence, inputs: dict) -> None:
    for (n, max_batch, _), (what, rec) in _cases(evidence).items():
        shapes = [call["shape"] for call in rec["calls"]]
        expect(all(len(s) == 2 and s[1] == FEATURES for s in shapes),
               f"{what}: every call should get a 2-D (batch, {FEATURES}) tensor; the model got shapes {shapes}")
        sizes = [s[0] for s in shapes]
        expect(len(sizes) == math.ceil(n / max_batch) and sizes == _sizes(n, max_batch),
               f"{what}: the model was called with batches of {sizes}, expected {_sizes(n, max_batch)}")
        expect(type(rec["outputs"]) is list and len(rec["outputs"]) == n,
               f"{what}: expected a list with one output per request")


def batched_modes(evidence: Evidence, inputs: dict) -> None:
    for (n, _, training), (what, rec) in _cases(evidence).items():
        calls = rec["calls"]
        # positive control: the requests really went through the model
        expect(sum(call["shape"][0] for call in calls if call["shape"]) == n,
               f"{what}: the model should see every request once (it saw "
               f"{sum(call['shape'][0] for call in calls if call['shape'])} rows)")
        expect(not any(call["training"] or call["inner_training"] for call in calls),
               f"{what}: the model (and every layer in it) must be in eval mode during each call")
        expect(all(call["inference"] for call in calls), f"{what}: every call must run inside torch.inference_mode()")
        expect(all(mode is training for mode in rec["modes_after"]),
               f"{what}: the model came in with training={training} and must leave in that mode")


# ---- export_and_reload -------------------------------------------------------------------------

def _reference(definition: str, state: dict, x: torch.Tensor) -> torch.Tensor:
    model = probe_definitions("inference")[definition](state).eval()
    with torch.no_grad():
        return model(x)


def export_matches(evidence: Evidence, inputs: dict) -> None:
    data = inputs["export_and_reload"]
    rec = value(evidence.probe("export_and_reload")["matches"], "export_and_reload on a model with BatchNorm and Dropout")
    want = _reference("_export_model", data["bn_state"], data["new"])
    what = "export_and_reload: the returned program"
    close(rec["first"], want, f"{what}, on new inputs of the example's shape, should answer like the model in eval "
          "mode and keep doing so after the model's weights change", rtol=1e-4, atol=1e-5)
    close(rec["second"], want, f"{what}, called a second time", rtol=1e-4, atol=1e-5)
    from_file = value(rec["from_file"], "loading the file at path with torch.export.load")
    close(from_file, want, "the program saved at path", rtol=1e-4, atol=1e-5)
    expect(all(mode is True for mode in rec["modes_after"]),
           "export_and_reload: the model came in training mode and must leave in training mode")


def export_dynamic(evidence: Evidence, inputs: dict) -> None:
    data = inputs["export_and_reload"]
    rec = value(evidence.probe("export_and_reload")["dynamic"], "export_and_reload on a plain MLP")
    batches = data["batches"]
    close(value(rec["fixed_same"], "the default program at the example's batch size"),
          _reference("_plain_mlp", data["mlp_state"], batches["8"]),
          "the default program at the example's batch size", rtol=1e-4, atol=1e-5)
    for size, x in batches.items():
        got = value(rec["dynamic"].get(size, {"error": "no result"}),
                    f"with dynamic_batch=True, the program on a batch of {size}")
        close(got, _reference("_plain_mlp", data["mlp_state"], x),
              f"with dynamic_batch=True, the program on a batch of {size}", rtol=1e-4, atol=1e-5)
    if rec["fixed_other_raised"] is not True:
        raise Fail("without dynamic_batch the program should refuse another batch size: was a dynamic dimension "
                   "declared anyway?")


CHECKS = AssignmentChecks(
    assignment="11_inference",
    probe_module="inference",
    inputs=inputs,
    tests={
        "test_batched_predict_outputs": batched_outputs,
        "test_batched_predict_batches": batched_batches,
        "test_batched_predict_modes": batched_modes,
        "test_export_and_reload_matches": export_matches,
        "test_export_and_reload_dynamic": export_dynamic,
    },
)
