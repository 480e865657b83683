"""Checks for 04_training_loop: train_epoch (T054/T055) and train_accumulated (T054-T056).

train_epoch's clauses (Exercise 1) and where each is checked, on three models (a list and a generator
of batches, SGD with and without momentum):
  1 one training step per batch: loss_fn(model(inputs), targets), backward, one optimizer step;
    the final weights equal the grader's own loop's ................................ train_epoch_reference
  2 a step sees its own batch's gradients only (stale gradients before the call) ........ train_epoch_reset
  3 a list of plain Python floats, one per batch, in order ................................ train_epoch_floats
    each the loss itself: equal, to the last bit, to loss.item() of the tensor loss_fn returned for that
    batch in the sandbox (not a rounded copy), and to the grader's own loop's loss before that batch's
    update (1e-4) .................................................................... train_epoch_reference
  4 no batch's graph alive after its step (each loss's graph tagged, watched with a weakref) . train_epoch_floats
  5 one pass over a generator; an empty iterable gives [] ......................... train_epoch_floats, reference
train_accumulated's clauses (Exercise 2):
  1 one step per group of `accumulate` micro-batches (a shorter last group too), with the gradients of the
    group's mean loss over its samples; none from before the call or the previous group ... accumulated_reference
    (equal sizes, accumulate=1), accumulated_uneven (uneven sizes, a partial group, stale gradients, Adam)
  2 loss_fn once per micro-batch; each backpropagated before the model runs on the next ... accumulated_graphs
  3 at most one host read per step (the function mode and ATen's item, any thread) ...... accumulated_syncs
  4 one float per step, the group's mean loss before the step; [] for an empty iterable .. accumulated_reference
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from grader.checking import AssignmentChecks, Evidence, Fail, close, expect, probe_definitions, tensor, uses, value

SHARED = probe_definitions(Path(__file__).parent)  # ARCHITECTURES, LOSSES, OPTIMIZERS: one definition for both sides
ARCHITECTURES, LOSSES, OPTIMIZERS = SHARED["ARCHITECTURES"], SHARED["LOSSES"], SHARED["OPTIMIZERS"]
#        arch,        loss,            lr,  momentum, batches, batch, generator, stale grads
CASES = [("tanh_mlp", "cross_entropy", 0.1, 0.0, 6, 5, True, False),
         ("relu_mlp", "cross_entropy", 0.2, 0.9, 5, 8, False, False),
         ("linear", "mse", 0.1, 0.0, 4, 4, False, True)]
# train_accumulated: arch, loss, optimizer, its options, micro-batch sizes, accumulate, generator, stale grads
ACC_CASES = [("tanh_mlp", "cross_entropy", "sgd", {"lr": 0.1}, [4] * 6, 3, True, False),          # equal sizes
             ("relu_mlp", "cross_entropy", "sgd", {"lr": 0.05, "momentum": 0.9}, [5] * 4, 4, False, False),
             ("linear", "mse", "sgd", {"lr": 0.1}, [4] * 3, 1, False, False),                     # accumulate=1
             ("linear", "mse", "adam", {"lr": 0.05}, [3, 5, 2, 4, 6, 1, 7], 3, False, True),       # uneven, partial, stale
             ("tanh_mlp", "cross_entropy", "adam", {"lr": 0.02}, [2, 6, 3], 5, True, True),        # one partial group
             ("relu_mlp", "mse", "sgd", {"lr": 0.05, "momentum": 0.9}, [6, 2, 2, 6, 3], 2, False, False)]
EQUAL, UNEVEN = slice(0, 3), slice(3, 6)
FULL_GROUPS = [i for i, (*_, sizes, k, _, _) in enumerate(ACC_CASES) if len(sizes) >= k]  # syncs, graphs counted here
# Ways to hide calls from the probe's function mode (switch modes off, pop them): no training loop needs them.
MODE_ESCAPES = {"DisableTorchFunction", "_pop_torch_function_stack", "_pop_mode", "_pop_mode_temporarily",
                "_set_torch_function_state", "_TorchFunctionState", "_set_skip_next_torch_function",
                "_skip_one_hop_torch_function"}


def _micro_batches(g: torch.Generator, model: nn.Module, loss: str, sizes: list[int]) -> list:
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    n_in, n_out = linears[0].in_features, linears[-1].out_features
    return [(torch.randn(n, n_in, generator=g),
             torch.randint(0, n_out, (n,), generator=g) if loss == "cross_entropy" else torch.randn(n, n_out, generator=g))
            for n in sizes]


def inputs() -> dict:
    g = torch.Generator().manual_seed(404)
    cases = []
    for arch, loss, lr, momentum, n, batch, generator, stale in CASES:
        torch.manual_seed(len(cases))
        model = ARCHITECTURES[arch]()
        cases.append({"arch": arch, "loss": loss, "lr": lr, "momentum": momentum, "generator": generator,
                      "stale_grads": stale, "batches": _micro_batches(g, model, loss, [batch] * n),
                      "state": {k: v.clone() for k, v in model.state_dict().items()}})
    acc_cases = []
    for arch, loss, optimizer, options, sizes, accumulate, generator, stale in ACC_CASES:
        torch.manual_seed(100 + len(acc_cases))
        model = ARCHITECTURES[arch]()
        acc_cases.append({"arch": arch, "loss": loss, "optimizer": optimizer, "options": options,
                          "accumulate": accumulate, "generator": generator, "stale_grads": stale,
                          "batches": _micro_batches(g, model, loss, sizes),
                          "state": {k: v.clone() for k, v in model.state_dict().items()}})
    return {"train_epoch": {"cases": cases}, "train_accumulated": {"cases": acc_cases}}


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
        where, alive = run["kept"][0] if run["kept"] else ("", [])
        expect(not alive, f"{what}: at {where}, the autograd graphs of earlier batches "
               f"({', '.join(str(i + 1) for i in alive)}) were still alive: something still holds their loss "
               "tensors. Keep loss.item(), a float, wherever the loss is logged")
    empty = value(evidence.probe("train_epoch")["empty"], "train_epoch with no batches")
    expect(empty == ["list", 0], "train_epoch with no batches should return []")
    train_epoch_reference(evidence, inputs, slice(0, 1), exact=False)  # the floats must be the real losses


def train_epoch_reference(evidence: Evidence, inputs: dict, cases: slice = slice(1, 2), exact: bool = True) -> None:
    for case, run, what in list(_runs(evidence, inputs))[cases]:
        losses, state = _reference(case)
        expect(len(run["items"]) == len(losses), f"{what}: {len(run['items'])} losses, expected {len(losses)}")
        got = torch.tensor([v if type(v) is float else float("nan") for v in run["items"]], dtype=torch.float64)
        close(got, torch.tensor(losses, dtype=torch.float64), f"{what}: the losses (one reset, forward, backward, "
              "step per batch; each loss recorded before the update)", rtol=1e-4, atol=1e-5)
        _same_weights(run, state, what)
    if exact:
        for case, run, what in _runs(evidence, inputs):
            _exact_losses(run, what)


def _exact_losses(run: dict, what: str) -> None:
    """Each logged value is the loss itself, to the last bit: what loss.item() gives for the tensor
    loss_fn returned for that batch (in the sandbox, so the answer's own arithmetic is not in
    question), not a rounded or otherwise reworked copy."""
    returned = [tensor(t, f"{what}: the loss of batch {i + 1}").double().item() for i, t in enumerate(run["losses"])]
    items = run["items"]
    if len(returned) != len(items):  # loss_fn called more or less than once per batch: match any of them
        returned = [set(returned)] * len(items)
    for i, (item, loss) in enumerate(zip(items, returned)):
        ok = item in loss if isinstance(loss, set) else item == loss
        if type(item) is float and not ok:
            want = min(loss, key=lambda v: abs(v - item)) if isinstance(loss, set) and loss else loss
            raise Fail(f"{what}: loss {i + 1} is {item!r}, but the loss of that batch is {want!r}: log the value "
                       "itself (loss.item()), not a rounded copy")


def train_epoch_reset(evidence: Evidence, inputs: dict) -> None:
    case, run, what = list(_runs(evidence, inputs))[2]
    _, state = _reference(case)
    _same_weights(run, state, f"{what}, with stale gradients present before the call")


def _same_weights(run: dict, state: dict, what: str) -> None:
    expect(sorted(run["state"]) == sorted(state), f"{what}: the model's parameters changed names")
    for key, expected in state.items():
        close(run["state"][key], expected, f"{what}: final weights ({key}) differ from a loop that resets the "
              "gradients before every backward()", rtol=1e-4, atol=1e-5)


# ---- train_accumulated -------------------------------------------------------------------------

def _groups(case: dict) -> list[list]:
    k = case["accumulate"]
    return [case["batches"][i:i + k] for i in range(0, len(case["batches"]), k)]


def _accumulated_reference(case: dict) -> tuple[list[float], dict]:
    """One optimizer step per group, on the group's micro-batches concatenated: what accumulation must equal."""
    model = ARCHITECTURES[case["arch"]]()
    model.load_state_dict(case["state"])
    optimizer = OPTIMIZERS[case["optimizer"]](model.parameters(), **case["options"])
    loss_fn, losses = LOSSES[case["loss"]](), []
    for group in _groups(case):
        optimizer.zero_grad()
        loss = loss_fn(model(torch.cat([x for x, _ in group])), torch.cat([y for _, y in group]))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model.state_dict()


def _acc_runs(evidence: Evidence, inputs: dict, cases: slice | list[int]):
    data = evidence.probe("train_accumulated")
    pairs = list(zip(inputs["train_accumulated"]["cases"], data["runs"], strict=True))
    for case, run in (pairs[cases] if isinstance(cases, slice) else [pairs[i] for i in cases]):
        sizes = [len(x) for x, _ in case["batches"]]
        what = (f"train_accumulated on a {case['arch']} with {OPTIMIZERS[case['optimizer']].__name__}, micro-batches of "
                f"{sizes} samples, accumulate={case['accumulate']}"
                + (", stale gradients present before the call" if case["stale_grads"] else ""))
        yield case, value(run, what), what


def _floats(case: dict, run: dict, what: str) -> None:
    steps = len(_groups(case))
    expect(run["type"] == "list", f"{what} returned {run['type']}, expected a list")
    expect(len(run["items"]) == steps, f"{what}: {len(run['items'])} losses, expected one per optimizer step "
           f"({steps}: every {case['accumulate']} micro-batches, and one for a shorter last group)")
    bad = [v for v in run["items"] if type(v) is not float]
    expect(not bad, f"{what}: every loss must be a plain Python float (call .item() once per step), found {bad[:3]}")


def _matches(evidence: Evidence, inputs: dict, cases: slice, rule: str) -> None:
    for case, run, what in _acc_runs(evidence, inputs, cases):
        _floats(case, run, what)
        losses, state = _accumulated_reference(case)
        close(torch.tensor(run["items"], dtype=torch.float64), torch.tensor(losses, dtype=torch.float64),
              f"{what}: the losses (each the mean loss over the group's samples, before its step)", rtol=1e-4, atol=1e-5)
        expect(sorted(run["state"]) == sorted(state), f"{what}: the model's parameters changed names")
        for key, expected in state.items():
            close(run["state"][key], expected, f"{what}: final weights ({key}) differ from one optimizer step per "
                  f"group on the group's micro-batches concatenated ({rule})", rtol=1e-4, atol=1e-5)


def accumulated_reference(evidence: Evidence, inputs: dict) -> None:
    _matches(evidence, inputs, EQUAL, "one reset before the group, its micro-batches' losses scaled by their share")
    empty = value(evidence.probe("train_accumulated")["empty"], "train_accumulated with no micro-batches")
    expect(empty == ["list", 0], "train_accumulated with no micro-batches should return []")


def accumulated_uneven(evidence: Evidence, inputs: dict) -> None:
    _matches(evidence, inputs, UNEVEN, "each micro-batch's loss weighted by its share of the group's samples, "
             "a step for the shorter last group, and gradients from before the call discarded")


def _did_the_work(case: dict, run: dict, what: str) -> None:
    """The loop ran (one loss per micro-batch, at most one step per group, a first loss that is a
    real loss of the first group), so that counting its reads or its graphs means something; the
    other tests judge the gradients and the values."""
    expect(run["type"] == "list" and run["items"] and type(run["items"][0]) is float,
           f"{what}: expected a list of float losses, got {run['type']} {run['items'][:3]}")
    expect(run["loss_calls"] == len(case["batches"]),
           f"{what}: loss_fn was called {run['loss_calls']} times, expected once per micro-batch ({len(case['batches'])})")
    expect(1 <= run["steps"] <= len(_groups(case)),
           f"{what}: optimizer.step() ran {run['steps']} times, expected once per group ({len(_groups(case))})")
    model = ARCHITECTURES[case["arch"]]()
    model.load_state_dict(case["state"])
    with torch.no_grad():
        micro = [LOSSES[case["loss"]]()(model(x), y).item() for x, y in _groups(case)[0]]
    low, high = min(micro) - 1e-4 * abs(min(micro)) - 1e-5, max(micro) + 1e-4 * abs(max(micro)) + 1e-5
    expect(low <= run["items"][0] <= high, f"{what}: the first loss is {run['items'][0]:.6g}, not an average of "
           f"the first group's micro-batch losses ({', '.join(f'{v:.6g}' for v in micro)})")


def accumulated_syncs(evidence: Evidence, inputs: dict) -> None:
    escapes = sorted(set().union(*(uses(source, MODE_ESCAPES, self_checks=True) for source in evidence.sources.values())))
    expect(not escapes, f"the answers reach into torch's function-override machinery ({', '.join(escapes)}), "
           "so their host reads cannot be counted: a training loop does not need it")
    for case, run, what in _acc_runs(evidence, inputs, FULL_GROUPS):
        _did_the_work(case, run, what)
        expect(run["intact"] and run["linear"] >= len(case["batches"]),
               f"{what}: the grader could not watch the tensor operations of the call (leave torch's modes alone)")
        steps = len(_groups(case))
        copies = [r for r in run["reads"] if r in ("cpu", "to(cpu)")]
        values = [r for r in run["reads"] if r not in ("cpu", "to(cpu)")]
        # two counts of the same reads: the function mode names them; ATen's item also sees other threads
        # and code that switched the mode off
        reads = max(len(values), run["scalar_reads"])
        seen = ", ".join(sorted(set(values))) if len(values) == reads else "ATen's item, on any thread"
        expect(reads <= steps, f"{what}: {reads} reads of a tensor's value on the host ({seen}) for {steps} "
               "optimizer steps; each one waits for the GPU. Keep the running loss on the device (add loss.detach() "
               "to it) and read it once per step")
        expect(len(copies) <= steps, f"{what}: {len(copies)} copies to the CPU for {steps} optimizer steps; each one "
               "waits for the GPU. Keep the running loss on the device and read it once per step")


def accumulated_graphs(evidence: Evidence, inputs: dict) -> None:
    for case, run, what in _acc_runs(evidence, inputs, FULL_GROUPS):
        _did_the_work(case, run, what)
        where, alive = run["kept"][0] if run["kept"] else ("", [])
        expect(not alive, f"{what}: at {where}, the autograd graphs of earlier micro-batches "
               f"({', '.join(str(i + 1) for i in alive)}) were still alive. Add loss.detach() to the running loss "
               "(not the loss itself), and backpropagate each micro-batch before computing the next one")
        where, waiting = run["ahead"][0] if run["ahead"] else ("", [])
        expect(not waiting, f"{what}: at {where}, the graph of micro-batch {', '.join(str(i + 1) for i in waiting)} "
               "had not been backpropagated yet, so two micro-batches' graphs were alive at once. Call backward() on "
               "each micro-batch's loss before running the model on the next micro-batch")


CHECKS = AssignmentChecks(
    inputs=inputs,
    tests={
        "test_train_epoch_floats": train_epoch_floats,
        "test_train_epoch_reference": train_epoch_reference,
        "test_train_epoch_reset": train_epoch_reset,
        "test_train_accumulated_reference": accumulated_reference,
        "test_train_accumulated_uneven": accumulated_uneven,
        "test_train_accumulated_syncs": accumulated_syncs,
        "test_train_accumulated_graphs": accumulated_graphs,
    },
)
