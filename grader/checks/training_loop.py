"""Checks for 04_training_loop: train_epoch (T054/T055) and param_groups_no_decay (T061)."""
from __future__ import annotations

import torch
from torch import nn

from . import AssignmentChecks, Evidence, close, expect, probe_definitions, value

SHARED = probe_definitions("training_loop")  # ARCHITECTURES, LOSSES, MODELS: one definition for both sides
ARCHITECTURES, LOSSES = SHARED["ARCHITECTURES"], SHARED["LOSSES"]
#        arch,        loss,            lr,  momentum, batches, batch, generator, stale grads
CASES = [("tanh_mlp", "cross_entropy", 0.1, 0.0, 6, 5, True, False),
         ("relu_mlp", "cross_entropy", 0.2, 0.9, 5, 8, False, False),
         ("linear", "mse", 0.1, 0.0, 4, 4, False, True)]
GROUP_CASES = [("cnn", 0.1), ("tied", 0.05), ("no_vectors", 0.01)]


def inputs() -> dict:
    g = torch.Generator().manual_seed(404)
    cases = []
    for arch, loss, lr, momentum, n, batch, generator, stale in CASES:
        torch.manual_seed(len(cases))
        model = ARCHITECTURES[arch]()
        first = next(m for m in model.modules() if isinstance(m, nn.Linear))
        last = [m for m in model.modules() if isinstance(m, nn.Linear)][-1]
        batches = []
        for _ in range(n):
            x = torch.randn(batch, first.in_features, generator=g)
            y = (torch.randint(0, last.out_features, (batch,), generator=g) if loss == "cross_entropy"
                 else torch.randn(batch, last.out_features, generator=g))
            batches.append((x, y))
        cases.append({"arch": arch, "loss": loss, "lr": lr, "momentum": momentum, "generator": generator,
                      "stale_grads": stale, "batches": batches,
                      "state": {k: v.clone() for k, v in model.state_dict().items()}})
    return {"train_epoch": {"cases": cases}, "param_groups_no_decay": {"cases": GROUP_CASES}}


def _reference(case: dict) -> tuple[list[float], dict]:
    """The loop the exercise asks for, run here from the same weights and data."""
    model = ARCHITECTURES[case["arch"]]()
    model.load_state_dict(case["state"])
    optimizer = torch.optim.SGD(model.parameters(), lr=case["lr"], momentum=case["momentum"])
    loss_fn, losses = LOSSES[case["loss"]](), []
    for x, y in case["batches"]:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model.state_dict()


def _runs(evidence: Evidence, inputs: dict):
    data = evidence.probe("train_epoch")
    for case, run in zip(inputs["train_epoch"]["cases"], data["runs"], strict=True):
        what = f"train_epoch on a {case['arch']} ({len(case['batches'])} batches)"
        yield case, value(run, what), what


def train_epoch_floats(evidence: Evidence, inputs: dict) -> None:
    for case, run, what in _runs(evidence, inputs):
        expect(run["type"] == "list", f"{what} returned {run['type']}, expected a list")
        expect(len(run["items"]) == len(case["batches"]), f"{what}: {len(run['items'])} losses, expected one per batch")
        bad = [v for v in run["items"] if type(v) is not float]
        expect(not bad, f"{what}: every loss must be a plain Python float (use loss.item()), found {bad[:3]}")
    empty = value(evidence.probe("train_epoch")["empty"], "train_epoch with no batches")
    expect(empty == ["list", 0], "train_epoch with no batches should return []")
    train_epoch_reference(evidence, inputs, slice(0, 1))  # the floats must be the real losses


def train_epoch_reference(evidence: Evidence, inputs: dict, cases: slice = slice(1, 2)) -> None:
    for case, run, what in list(_runs(evidence, inputs))[cases]:
        losses, state = _reference(case)
        expect(len(run["items"]) == len(losses), f"{what}: {len(run['items'])} losses, expected {len(losses)}")
        got = torch.tensor([v if type(v) is float else float("nan") for v in run["items"]], dtype=torch.float64)
        close(got, torch.tensor(losses, dtype=torch.float64), f"{what}: the losses (one reset, forward, backward, "
              "step per batch; each loss recorded before the update)", rtol=1e-4, atol=1e-5)
        _same_weights(run, state, what)


def train_epoch_reset(evidence: Evidence, inputs: dict) -> None:
    case, run, what = list(_runs(evidence, inputs))[2]
    _, state = _reference(case)
    _same_weights(run, state, f"{what}, with stale gradients present before the call")


def _same_weights(run: dict, state: dict, what: str) -> None:
    expect(sorted(run["state"]) == sorted(state), f"{what}: the model's parameters changed names")
    for key, expected in state.items():
        close(run["state"][key], expected, f"{what}: final weights ({key}) differ from a loop that resets the "
              "gradients before every backward()", rtol=1e-4, atol=1e-5)


# ---- param_groups_no_decay ---------------------------------------------------------------------

def _expected_groups(model_name: str) -> tuple[list[str], list[str]]:
    model = SHARED["MODELS"][model_name]()
    decay, no_decay, seen = [], [], set()
    for name, p in model.named_parameters():
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            (decay if p.ndim >= 2 else no_decay).append(name)
    return decay, no_decay


def _group_results(evidence: Evidence, inputs: dict):
    results = evidence.probe("param_groups_no_decay")
    for (model_name, wd), result in zip(inputs["param_groups_no_decay"]["cases"], results, strict=True):
        what = f"param_groups_no_decay({model_name} model, {wd})"
        result = value(result, what)
        expect(result["type"] == "list", f"{what} returned {result['type']}, expected a list of two dicts")
        expect(len(result["groups"]) == 2, f"{what}: expected exactly two groups, got {len(result['groups'])}")
        expect(all(isinstance(g, dict) for g in result["groups"]), f"{what}: each group must be a dict with a 'params' list")
        yield model_name, wd, result["groups"], what


def groups_split(evidence: Evidence, inputs: dict) -> None:
    for model_name, wd, groups, what in list(_group_results(evidence, inputs))[:1]:
        _compare(model_name, wd, groups, what)


def groups_edges(evidence: Evidence, inputs: dict) -> None:
    for model_name, wd, groups, what in list(_group_results(evidence, inputs))[1:]:
        _compare(model_name, wd, groups, what)


def _compare(model_name, wd, groups, what) -> None:
    decay, no_decay = _expected_groups(model_name)
    expect(groups[0]["weight_decay"] == wd and groups[1]["weight_decay"] == 0.0,
           f"{what}: group 0 needs weight_decay={wd}, group 1 weight_decay=0.0")
    for group, want, kind in ((groups[0], decay, "weights (ndim >= 2)"), (groups[1], no_decay, "biases and norm parameters")):
        expect(len(group["params"]) == len(set(group["params"])), f"{what}: a parameter appears twice")
        expect(sorted(group["params"]) == sorted(want),
               f"{what}: the group for {kind} holds {sorted(group['params'])}, expected {sorted(want)} "
               "(trainable parameters only, tied weights once)")


CHECKS = AssignmentChecks(
    assignment="04_training_loop",
    probe_module="training_loop",
    inputs=inputs,
    tests={
        "test_train_epoch_floats": train_epoch_floats,
        "test_train_epoch_reference": train_epoch_reference,
        "test_train_epoch_reset": train_epoch_reset,
        "test_param_groups_split": groups_split,
        "test_param_groups_edge_cases": groups_edges,
    },
)
