"""Checks for 07_speed_knobs: amp_train_step (T088) and pad_to_multiple / pad_linear (T089)."""
from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from . import AssignmentChecks, Evidence, Fail, close, equal, expect, probe_definitions, tensor, value

STEP = "amp_train_step(model, batch, optimizer, scaler, 'cpu', {dtype})"


def inputs() -> dict:
    torch.manual_seed(707)
    net = probe_definitions("speed_knobs")["_Net"]([])
    state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    x = torch.randn(8, 16)
    overflow_x = 1000 * x
    with torch.no_grad():
        overflow_y = net(overflow_x).argmin(dim=1)       # the least likely class: a loss of hundreds or more
    amp = {"state": state, "x": x, "y": torch.randint(0, 4, (8,)), "lr": 0.5, "init_scale": 1024.0,
           "overflow_x": overflow_x, "overflow_y": overflow_y, "overflow_scale": 2.0 ** 120}
    pad_cases = [
        {"x": torch.randn(2, 5, 3), "multiple": 8, "dim": 1},
        {"x": torch.randint(-9, 9, (3, 6)), "multiple": 4, "dim": -1},
        {"x": torch.randn(4, 16), "multiple": 8, "dim": -1},                  # already a multiple
        {"x": torch.randn(65, 2), "multiple": 64, "dim": 0},
        {"x": torch.randn(3, 10, dtype=torch.float64), "multiple": None, "dim": None},   # the defaults
        {"x": torch.randn(2, 3, 5, 7), "multiple": 8, "dim": -3},
        {"x": torch.randn(5).to(torch.bfloat16), "multiple": 16, "dim": 0},
    ]
    linear_cases = []
    for n_in, n_out, bias, dtype, multiple in ((13, 21, True, "float32", 8), (13, 21, False, "float32", 8),
                                               (32, 20, True, "float64", 16), (24, 40, True, "float32", 8),
                                               (7, 3, True, "float32", 64)):
        layer = torch.nn.Linear(n_in, n_out, bias=bias, dtype=getattr(torch, dtype))
        linear_cases.append({"in": n_in, "out": n_out, "bias": bias, "dtype": dtype, "multiple": multiple,
                             "state": {k: v.detach().clone() for k, v in layer.state_dict().items()},
                             "x": torch.randn(5, n_in)})
    return {"amp_train_step": amp, "padding": {"pad_cases": pad_cases, "linear_cases": linear_cases}}


# ---- exercise 1: amp_train_step -------------------------------------------------------------------

@contextlib.contextmanager
def _one_thread():
    """The sandbox runs on one thread; the reference does too, so both sum in the same order."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _reference(inputs: dict, dtype: str):
    """The loss before the step and the true (unscaled) gradients, under autocast with ``dtype``."""
    amp = inputs["amp_train_step"]
    net = probe_definitions("speed_knobs")["_net"](amp["state"], [])
    with _one_thread():
        with torch.autocast("cpu", dtype=getattr(torch, dtype)):
            loss = F.cross_entropy(net(amp["x"]), amp["y"])
        grads = torch.autograd.grad(loss, list(net.parameters()))
    return loss.item(), [g.float() for g in grads]


def _run(evidence: Evidence, name: str) -> dict:
    dtype = "torch.float16" if name == "float16" else "torch.bfloat16"
    return value(evidence.probe("amp_train_step")[name], STEP.format(dtype=dtype))


def _near(got: torch.Tensor, want: torch.Tensor, share: float = 0.03) -> bool:
    """Within ``share`` of the largest entry of ``want`` everywhere (NaN never is)."""
    bound = share * want.abs().max().item() + 1e-7
    return bool((got.double() - want.double()).abs().max().item() <= bound)


def _updates(rec: dict, inputs: dict, what: str) -> list[torch.Tensor]:
    before = list(inputs["amp_train_step"]["state"].values())
    params = rec["params"]
    expect(isinstance(params, list) and len(params) == len(before), f"{what}: the parameters were not returned")
    updates = []
    for got, start in zip(params, before):
        got = tensor(got, f"{what}: a parameter")
        expect(got.shape == start.shape and got.dtype == torch.float32,
               f"{what}: a parameter changed its shape or dtype to {tuple(got.shape)} {got.dtype}; the weights must "
               "stay float32")
        updates.append(got - start)
    return updates


def _check_step(rec: dict, inputs: dict, grads: list[torch.Tensor], what: str, wrong: str) -> None:
    lr, scale = inputs["amp_train_step"]["lr"], inputs["amp_train_step"]["init_scale"]
    updates = _updates(rec, inputs, what)
    wanted = [-lr * g for g in grads]
    if all(_near(u, w) for u, w in zip(updates, wanted)):
        return
    if all(bool((u == 0).all()) for u in updates):
        raise Fail(f"{what}: the parameters did not change; step the optimizer through scaler.step(optimizer)")
    if all(_near(u, scale * w) for u, w in zip(updates, wanted)):
        raise Fail(f"{what}: the optimizer stepped with the scaled gradients; call scaler.step(optimizer), which "
                   "unscales them before the step")
    raise Fail(f"{what}: {wrong}")


def _fits(g: torch.Tensor, dtype: torch.dtype) -> bool:
    """Every value survives a round trip through ``dtype``."""
    return bool(torch.equal(g.to(dtype).float(), g.float()))


def _computed_in(grads: list, name: str) -> bool:
    """The gradients carry the fingerprint of matrix products run in ``name``: under autocast, a weight's
    gradient is computed in the low-precision dtype and only then converted to float32, so every value fits
    that dtype (a float32 computation leaves almost none that fit; float16's are finer than bfloat16's)."""
    grads = [tensor(g, "a gradient computed by backward()").float() for g in grads]
    if name == "bfloat16":
        return all(_fits(g, torch.bfloat16) for g in grads)
    return all(_fits(g, torch.float16) for g in grads) and not all(_fits(g, torch.bfloat16) for g in grads)


def amp_autocast(evidence: Evidence, inputs: dict) -> None:
    for name in ("bfloat16", "float16"):
        rec = _run(evidence, name)
        call = STEP.format(dtype=f"torch.{name}")
        log = rec["log"]
        expect(bool(log), f"{call} never called the model")
        expect(all(entry["autocast"] is True for entry in log),
               f"{call}: the forward pass did not run under autocast; wrap the forward pass and the loss in "
               "torch.autocast(device_type, dtype=dtype)")
        computed = sorted({entry["hidden"] for entry in log})
        expect(computed == [f"torch.{name}"],
               f"{call}: under autocast with dtype=torch.{name} a Linear layer computes in torch.{name}, but here it "
               f"computed in {', '.join(computed)}; pass the dtype argument to torch.autocast")
        expect(all(d == "torch.float32" for d in rec["param_dtypes"]),
               f"{call}: the weights must stay float32 (autocast casts per operation); do not convert the model")
        seen = rec["backward_grads"]
        expect(isinstance(seen, list) and bool(seen) and all(g is not None for g in seen),
               f"{call}: backward() did not compute a gradient for every parameter")
        expect(_computed_in(seen, name),
               f"{call}: the gradients show that the matrix products did not run in torch.{name}; run the forward "
               "pass under torch.autocast(device_type, dtype=dtype)")
        expect(isinstance(rec["loss"], float), f"{call} should return the loss as a Python float (loss.item()), "
               f"got {rec['loss']}")
        want, _ = _reference(inputs, name)
        expect(abs(rec["loss"] - want) <= 5e-3 * abs(want) + 1e-3,
               f"{call} returned {rec['loss']:.6g}, not the batch's loss before the step ({want:.6g})")


def amp_scaled(evidence: Evidence, inputs: dict) -> None:
    rec = _run(evidence, "bfloat16")
    what = STEP.format(dtype="torch.bfloat16")
    scale = inputs["amp_train_step"]["init_scale"]
    _, grads = _reference(inputs, "bfloat16")
    seen = rec["backward_grads"]
    expect(isinstance(seen, list) and len(seen) == len(grads) and all(g is not None for g in seen),
           f"{what}: backward() did not compute a gradient for every parameter")
    for got, want in zip(seen, grads):
        got = tensor(got, f"{what}: a gradient computed by backward()")
        expect(got.shape == want.shape, f"{what}: a gradient has shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        if _near(got.float(), want):
            raise Fail(f"{what}: backward() ran on the unscaled loss, so small float16 gradients would underflow; "
                       "call scaler.scale(loss).backward()")
        expect(_near(got.float() / scale, want),
               f"{what}: the gradients computed by backward() are not the scale ({scale:g}) times the true ones; "
               "call scaler.scale(loss).backward() once")
    _check_step(rec, inputs, grads, what, "the parameters after the step differ from one SGD step with the unscaled "
                                          "gradients")
    expect(rec["scale"] == 2 * scale,
           f"{what}: after a clean step the scale should grow from {scale:g} to {2 * scale:g} (growth_interval=1), but it "
           f"is {rec['scale']:g}; call scaler.update() after scaler.step(optimizer)")


def amp_overflow(evidence: Evidence, inputs: dict) -> None:
    rec = _run(evidence, "overflow")
    amp = inputs["amp_train_step"]
    what = f"{STEP.format(dtype='torch.bfloat16')} with a scale of {amp['overflow_scale']:g}, where the scaled loss overflows"
    for update in _updates(rec, inputs, what):
        expect(bool((update == 0).all()),
               f"{what}: the parameters changed; a step with inf/NaN gradients must be skipped: let "
               "scaler.step(optimizer) call the optimizer")
    expect(rec["scale"] == amp["overflow_scale"] / 2,
           f"{what}: after the overflow scaler.update() should halve the scale to {amp['overflow_scale'] / 2:g}, but it is "
           f"{rec['scale']:g}")


def amp_fresh(evidence: Evidence, inputs: dict) -> None:
    rec = _run(evidence, "stale")
    what = f"{STEP.format(dtype='torch.bfloat16')} on parameters holding gradients from an earlier step"
    _, grads = _reference(inputs, "bfloat16")
    _check_step(rec, inputs, grads, what, "the old gradients leaked into this step; clear them first "
                                          "(optimizer.zero_grad())")


# ---- exercise 2: pad_to_multiple, pad_linear ------------------------------------------------------

def _padded(x: torch.Tensor, multiple: int, dim: int) -> torch.Tensor:
    dim %= x.dim()
    shape = list(x.shape)
    shape[dim] += -shape[dim] % multiple
    out = torch.zeros(shape, dtype=x.dtype)
    out[tuple(slice(0, n) for n in x.shape)] = x
    return out


def pad_to_multiple(evidence: Evidence, inputs: dict) -> None:
    results = evidence.probe("padding")["to_multiple"]
    for case, rec in zip(inputs["padding"]["pad_cases"], results, strict=True):
        x = case["x"]
        args = ", ".join(f"{k}={case[k]}" for k in ("multiple", "dim") if case.get(k) is not None)
        what = f"pad_to_multiple(x of shape {tuple(x.shape)}, {x.dtype}{', ' + args if args else ''})"
        rec = value(rec, what)
        want = _padded(x, case["multiple"] or 8, -1 if case["dim"] is None else case["dim"])
        got = tensor(rec["out"], what)
        expect(got.shape == want.shape, f"{what} has shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        equal(got, want, f"{what} (the original values first, then zeros)")
        equal(rec["input_after"], x, f"{what}: x itself must not be modified")


def pad_linear(evidence: Evidence, inputs: dict) -> None:
    results = evidence.probe("padding")["linear"]
    for case, rec in zip(inputs["padding"]["linear_cases"], results, strict=True):
        what = (f"pad_linear(nn.Linear({case['in']}, {case['out']}, bias={case['bias']}, dtype=torch.{case['dtype']}), "
                f"{case['multiple']})")
        rec = value(rec, what)
        m = case["multiple"]
        n_in, n_out = case["in"] + -case["in"] % m, case["out"] + -case["out"] % m
        expect(rec["is_linear"] is True, f"{what} should return an nn.Linear")
        expect((rec["in_features"], rec["out_features"]) == (n_in, n_out),
               f"{what} should have {n_in} -> {n_out} features, got {rec['in_features']} -> {rec['out_features']}")
        dtype = getattr(torch, case["dtype"])
        weight = torch.zeros(n_out, n_in, dtype=dtype)
        weight[:case["out"], :case["in"]] = case["state"]["weight"]
        equal(rec["weight"], weight, f"{what}: its weight (the original in the top-left corner, zeros elsewhere)")
        expect(rec["trainable"] is True, f"{what}: its weight should be an nn.Parameter that requires grad")
        bias = None
        if case["bias"]:
            bias = torch.zeros(n_out, dtype=dtype)
            bias[:case["out"]] = case["state"]["bias"]
            expect(rec["bias"] is not None, f"{what}: the padded layer lost its bias")
            equal(rec["bias"], bias, f"{what}: its bias (the original values, then zeros)")
        else:
            expect(rec["bias"] is None, f"{what}: a layer without bias should stay without bias")
        x = F.pad(case["x"].to(dtype), (0, n_in - case["in"]))
        close(rec["out"], F.linear(x, weight, bias), f"{what}: its output on a zero-padded input")
        equal(rec["original_weight"], case["state"]["weight"], f"{what}: the original layer must not be modified")
        if case["bias"]:
            equal(rec["original_bias"], case["state"]["bias"], f"{what}: the original layer must not be modified")


CHECKS = AssignmentChecks(
    assignment="07_speed_knobs",
    probe_module="speed_knobs",
    inputs=inputs,
    tests={
        "test_amp_train_step_autocast": amp_autocast,
        "test_amp_train_step_scaled": amp_scaled,
        "test_amp_train_step_overflow": amp_overflow,
        "test_amp_train_step_fresh_gradients": amp_fresh,
        "test_pad_to_multiple": pad_to_multiple,
        "test_pad_linear": pad_linear,
    },
)
