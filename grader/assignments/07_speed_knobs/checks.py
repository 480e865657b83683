"""Checks for 07_speed_knobs: amp_train_step (T088) and pad_to_multiple / pad_linear (T089).

amp_train_step's clauses (the notebook's Exercise 1: a mixed-precision step with gradient clipping) and
where each is checked; "true" gradients are the loss's own, not the scaled loss's:
  1 old gradients do not reach the step (on stale .grad the weights move as in the clean run) .... amp_fresh
  2 forward + loss under autocast with the dtype given, nothing else (backward, step, update) ..... amp_autocast
  3 the weights stay float32 (in the forward pass too; the update is exact in float32) .. amp_autocast, amp_scaled
  4 one backward, on the loss times the scale .................................................... amp_scaled
  5 the true gradients clipped to max_norm before the step: each weight moves by -lr * clip(true
    gradient), the clip computed here from the grader's own gradients; clipping the scaled
    gradients, clipping after the step or not clipping fail; above the norm, nothing is clipped ... amp_scaled
  6 the optimizer given steps once, only through scaler.step ............................ amp_scaled, amp_overflow
    so a step whose gradients overflowed is skipped; scaler.update() once, by its rules .. amp_overflow, amp_scaled
  7 returns (loss, norm) as floats: the loss before the step, unscaled, computed under autocast ..... amp_autocast
    and the true gradients' total norm before clipping (inf or nan after an overflow) ... amp_scaled, amp_overflow
  8 when the call returns, .grad holds this step's true, clipped gradient (not None, not scaled) .... amp_fresh
  the signature's defaults, device_type="cuda" and dtype=torch.float16 (read, not run) .......... amp_autocast
  and no torch function replaced (clip_grad_norm_ and GradScaler.unscale_ among them) .............. every test
pad_to_multiple (Exercise 2), all in pad_to_multiple: zeros appended along dim (negative dims, sizes that
already are multiples, 0 included), dtype kept (float16, bfloat16, int64, float64), device kept under another
default device, x unmodified, gradients flow back to x.
pad_linear (Exercise 2), all in pad_linear: a new nn.Linear sharing no tensor with the original (also when
nothing needs padding), sizes rounded up (multiple=8 when not given), weight and bias padded with zeros,
trainable parameters, dtype and device kept (float16, bfloat16, float64; another default device), the original
unmodified.
Exercise 2's tests also give nothing to an answer that replaced torch's functions.
"""
from __future__ import annotations

import contextlib
import math
from pathlib import Path

import torch
import torch.nn.functional as F

from grader.checking import AssignmentChecks, Evidence, Fail, close, equal, expect, probe_definitions, tensor, value

STEP = "amp_train_step(model, batch, optimizer, scaler, {max_norm:g}, 'cpu', {dtype})"
RUNS = {"bfloat16": "", "float16": "", "loose": "",
        "overflow": " with a scale of {scale:g}, where the scaled loss overflows",
        "stale": " on parameters holding gradients from an earlier step"}


def inputs() -> dict:
    torch.manual_seed(707)
    net = probe_definitions(Path(__file__).parent)["_Net"]([])
    state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    x = torch.randn(8, 16)
    overflow_x = 1000 * x
    with torch.no_grad():
        overflow_y = net(overflow_x).argmin(dim=1)       # the least likely class: a loss of hundreds or more
    # The true gradients' total norm is about 0.98: max_norm 0.5 clips them to about half, 5.0 leaves them.
    amp = {"state": state, "x": x, "y": torch.randint(0, 4, (8,)), "lr": 0.5, "init_scale": 1024.0,
           "max_norm": 0.5, "loose_max_norm": 5.0,
           "overflow_x": overflow_x, "overflow_y": overflow_y, "overflow_scale": 2.0 ** 120}
    pad_cases = [
        {"x": torch.randn(2, 5, 3), "multiple": 8, "dim": 1},
        {"x": torch.randint(-9, 9, (3, 6)), "multiple": 4, "dim": -1},
        {"x": torch.randn(4, 16), "multiple": 8, "dim": -1},                  # already a multiple
        {"x": torch.randn(65, 2), "multiple": 64, "dim": 0},
        {"x": torch.randn(3, 10, dtype=torch.float64), "multiple": None, "dim": None},   # the defaults
        {"x": torch.randn(2, 3, 5, 7), "multiple": 8, "dim": -3},
        {"x": torch.randn(5).to(torch.bfloat16), "multiple": 16, "dim": 0},
        {"x": torch.randn(3, 7).to(torch.float16), "multiple": 8, "dim": -2},
        {"x": torch.randn(3, 0), "multiple": 8, "dim": -1},                   # a size of 0 already is a multiple
        {"x": torch.randn(2, 11), "multiple": 8, "dim": -1, "default_device": "meta"},
        {"x": torch.randn(3, 5), "multiple": 4, "dim": 0, "grad": True, "weights": torch.randn(4, 5)},
        {"x": torch.randn(3, 8), "multiple": 4, "dim": -1, "grad": True, "weights": torch.randn(3, 8)},  # no padding
    ]
    linear_cases = [_linear_case(*spec) for spec in (
        (13, 21, True, "float32", 8), (13, 21, False, "float32", 8),
        (32, 20, True, "float64", 16), (24, 40, True, "float32", 8),    # both already multiples
        (7, 3, True, "float32", 64), (10, 6, True, "float16", 8), (6, 9, True, "bfloat16", 4),
        (9, 5, True, "float32", 8, "meta"), (20, 10, True, "float32", None))]     # the default
    linear_cases.append(_linear_case(12, 20, True, "float32", 8, frozen=True))  # a frozen layer: the new one trains
    return {"amp_train_step": amp, "padding": {"pad_cases": pad_cases, "linear_cases": linear_cases}}


def _linear_case(n_in: int, n_out: int, bias: bool, dtype: str, multiple: int | None, default: str | None = None,
                 frozen: bool = False) -> dict:
    """A layer for pad_linear (its state), its input, and how it is called: under another default device,
    frozen (requires_grad False)."""
    layer = torch.nn.Linear(n_in, n_out, bias=bias, dtype=getattr(torch, dtype))
    return {"in": n_in, "out": n_out, "bias": bias, "dtype": dtype, "multiple": multiple, "default_device": default,
            "frozen": frozen, "state": {k: v.detach().clone() for k, v in layer.state_dict().items()},
            "x": torch.randn(5, n_in)}


def _untouched(replaced, what: str) -> None:
    """No torch function the tests or the mechanism rely on was replaced by the answer's code."""
    if replaced:
        names = ", ".join(sorted(set(replaced))[:6])
        raise Fail(f"{what}: the answer's code replaced {names}; an answer that changes torch's own functions or "
                   "classes earns no points for this exercise")


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
    net = probe_definitions(Path(__file__).parent)["_net"](amp["state"], [])
    with _one_thread():
        with torch.autocast("cpu", dtype=getattr(torch, dtype)):
            loss = F.cross_entropy(net(amp["x"]), amp["y"])
        grads = torch.autograd.grad(loss, list(net.parameters()))
    return loss.item(), [g.float() for g in grads]


def _total_norm(grads: list[torch.Tensor]) -> float:
    """The 2-norm of all the gradients together (as torch.nn.utils.clip_grad_norm_ measures it)."""
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads])).item()


def _clipped(grads: list[torch.Tensor], max_norm: float) -> list[torch.Tensor]:
    """``grads`` scaled together so that their total norm is at most ``max_norm`` (clip_grad_norm_'s rule)."""
    factor = min(1.0, max_norm / (_total_norm(grads) + 1e-6))
    return [g.float() * factor for g in grads]


def _max_norm(name: str, inputs: dict) -> float:
    amp = inputs["amp_train_step"]
    return amp["loose_max_norm"] if name == "loose" else amp["max_norm"]


def _dtype(name: str) -> str:
    return "float16" if name == "float16" else "bfloat16"


def _what(name: str, inputs: dict) -> str:
    return (STEP.format(max_norm=_max_norm(name, inputs), dtype=f"torch.{_dtype(name)}")
            + RUNS[name].format(scale=inputs["amp_train_step"]["overflow_scale"]))


def _amp_untouched(evidence: Evidence, inputs: dict) -> None:
    """Every run of the answer left torch's functions alone (checked before anything else: a replaced
    is_autocast_enabled or GradScaler method would make the other records say what the answer wants)."""
    for name, rec in evidence.probe("amp_train_step").items():
        if isinstance(rec, dict) and "replaced" in rec:
            log = rec["log"] if isinstance(rec.get("log"), list) else []
            _untouched(list(rec["replaced"]) + [n for entry in log for n in entry.get("replaced", [])],
                       _what(name, inputs))


def _run(evidence: Evidence, name: str, inputs: dict) -> dict:
    _amp_untouched(evidence, inputs)
    return value(evidence.probe("amp_train_step")[name], _what(name, inputs))


def _near(got: torch.Tensor, want: torch.Tensor, share: float = 0.03) -> bool:
    """Within ``share`` of the largest entry of ``want`` everywhere (NaN never is)."""
    bound = share * want.abs().max().item() + 1e-7
    return bool((got.double() - want.double()).abs().max().item() <= bound)


def _all_near(got: list[torch.Tensor], want: list[torch.Tensor], share: float = 0.03) -> bool:
    return all(_near(g, w, share) for g, w in zip(got, want, strict=True))


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


def _check_step(rec: dict, inputs: dict, grads: list[torch.Tensor], max_norm: float, what: str) -> None:
    """The weights moved by one SGD step with the true gradients clipped to ``max_norm``; else, where the
    update shows it, which common mistake moved them otherwise."""
    lr, scale = inputs["amp_train_step"]["lr"], inputs["amp_train_step"]["init_scale"]
    updates = _updates(rec, inputs, what)
    norm = _total_norm(grads)
    wanted = [-lr * g for g in _clipped(grads, max_norm)]
    if _all_near(updates, wanted):
        return
    if all(bool((u == 0).all()) for u in updates):
        raise Fail(f"{what}: the parameters did not change; the optimizer must step (through the scaler)")
    if norm > max_norm and _all_near(updates, [-lr * g for g in grads]):
        raise Fail(f"{what}: the weights moved by one step with the unclipped gradients (total norm {norm:.4g}, "
                   f"above max_norm={max_norm:g}); clip them before the optimizer steps")
    if _all_near(updates, [-lr * g / scale for g in _clipped([scale * g for g in grads], max_norm)]):
        raise Fail(f"{what}: the weights moved far less than one step with the clipped true gradients: the "
                   f"gradients were clipped while still multiplied by the scale ({scale:g}), so their norm was "
                   f"{scale:g} times the true one ({norm:.4g}) and clipping cut them that much harder; clip the "
                   "true gradients")
    if _all_near(updates, [w * scale for w in wanted]):
        raise Fail(f"{what}: the optimizer stepped with gradients still multiplied by the scale ({scale:g}); the "
                   "step must use the true gradients, clipped")
    if _all_near(updates, [w / scale for w in wanted]):
        raise Fail(f"{what}: the weights moved by 1/{scale:g} of one step with the clipped true gradients: were the "
                   "gradients divided by the scale twice?")
    raise Fail(f"{what}: the parameters after the step differ from one SGD step (lr={lr:g}) with the true gradients "
               f"clipped to a total norm of at most max_norm={max_norm:g} (their norm before clipping: {norm:.4g})")


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


def _records(rec: dict, kind: str) -> list[dict]:
    records = rec["record"][kind]
    expect(isinstance(records, list) and all(isinstance(r, dict) for r in records), "malformed records")
    return records


def amp_autocast(evidence: Evidence, inputs: dict) -> None:
    """Clauses 2, 3 and 7's loss: the forward pass and the loss (only they) under autocast with the dtype
    given, float32 weights throughout, and the loss they computed returned as a float; the signature's
    defaults."""
    defaults = value(evidence.probe("amp_train_step")["defaults"], "amp_train_step's signature")
    expect(defaults == {"device_type": "'cuda'", "dtype": "torch.float16"},
           f"amp_train_step's defaults are device_type={defaults['device_type']}, dtype={defaults['dtype']}; the "
           "exercise asks for device_type=\"cuda\", dtype=torch.float16: what a caller on a GPU gets without "
           "passing them")
    for name in ("bfloat16", "float16"):
        rec = _run(evidence, name, inputs)
        call = _what(name, inputs)
        log = rec["log"]
        expect(bool(log), f"{call} never called the model")
        expect(all(entry["autocast"] is True for entry in log),
               f"{call}: the forward pass did not run under autocast; wrap the forward pass and the loss in "
               "torch.autocast(device_type, dtype=dtype)")
        computed = sorted({entry["hidden"] for entry in log})
        expect(computed == [f"torch.{name}"],
               f"{call}: under autocast with dtype=torch.{name} a Linear layer computes in torch.{name}, but here it "
               f"computed in {', '.join(computed)}; pass the dtype argument to torch.autocast")
        weights = sorted({entry["weights"] for entry in log})
        expect(weights == ["torch.float32"],
               f"{call}: during the forward pass the model's weights were {', '.join(weights)}; leave them float32 "
               "(autocast casts per operation): do not convert the model or its parameters")
        expect(all(d == "torch.float32" for d in rec["param_dtypes"]),
               f"{call}: the weights must stay float32 (autocast casts per operation); do not convert the model")
        expect(not any(r["autocast"] for r in _records(rec, "backward")),
               f"{call}: backward() ran under autocast; only the forward pass and the loss belong in the autocast "
               "block: run the backward pass after leaving it")
        expect(not any(r["autocast"] for r in _records(rec, "optimizer_steps") + _records(rec, "scaler_steps")
                       + _records(rec, "updates")),
               f"{call}: the optimizer step or the scale update ran under autocast; only the forward pass and the "
               "loss belong in the autocast block")
        seen = rec["backward_grads"]
        expect(isinstance(seen, list) and bool(seen) and all(g is not None for g in seen),
               f"{call}: backward() did not compute a gradient for every parameter")
        expect(_computed_in(seen, name),
               f"{call}: the gradients show that the matrix products did not run in torch.{name}; run the forward "
               "pass under torch.autocast(device_type, dtype=dtype)")
        loss = rec["loss"]
        expect(isinstance(loss, float),
               f"{call} should return the pair (loss, norm) of Python floats; its loss came back as {loss}")
        want, _ = _reference(inputs, name)
        if abs(loss - want) <= 1e-5 * abs(want) + 1e-6:
            continue
        scale = inputs["amp_train_step"]["init_scale"]
        if min(abs(loss - want * s) for s in (scale, 2 * scale)) <= 1e-3 * abs(want) * scale:
            raise Fail(f"{call} returned the loss {loss:.6g}, the scaled loss; return the loss itself ({want:.6g})")
        for ratio in (0.5, 2.0):
            if abs(loss - ratio * want) <= 1e-3 * abs(want):
                raise Fail(f"{call} returned the loss {loss:.6g}, {ratio:g} times the loss before the step "
                           f"({want:.6g}): was it unscaled with a scale that scaler.update() had already changed? "
                           "Return loss.item()")
        if abs(loss - want) <= 2e-2 * abs(want) and _fits(torch.tensor([loss]), getattr(torch, name)):
            raise Fail(f"{call} returned the loss {loss:.6g}, a loss computed in torch.{name} ({want:.6g} under "
                       "autocast): compute the loss inside the autocast block too (autocast runs cross_entropy in "
                       "float32)")
        raise Fail(f"{call} returned the loss {loss:.6g}, not the batch's loss before the step ({want:.6g})")


def _check_norm(rec: dict, grads: list[torch.Tensor], max_norm: float, scale: float, what: str) -> None:
    """Clause 7's norm: the true gradients' total norm before clipping, as a float."""
    got, norm = rec["norm"], _total_norm(grads)
    expect(isinstance(got, float),
           f"{what} should return the pair (loss, norm) of Python floats; its norm came back as {got}")
    if abs(got - norm) <= 1e-3 * norm:
        return
    if abs(got - scale * norm) <= 1e-3 * scale * norm:
        raise Fail(f"{what} returned the norm {got:.6g}, that of the gradients multiplied by the scale ({scale:g}); "
                   f"return the true gradients' total norm ({norm:.6g})")
    if norm > max_norm and abs(got - max_norm) <= 1e-3 * max_norm:
        raise Fail(f"{what} returned the norm {got:.6g}, the norm after clipping; return the true gradients' total "
                   f"norm before clipping ({norm:.6g})")
    raise Fail(f"{what} returned the norm {got:.6g}, expected the true gradients' total norm before clipping "
               f"({norm:.6g})")


def amp_scaled(evidence: Evidence, inputs: dict) -> None:
    """Clauses 3 to 7: one backward on the scaled loss; the true gradients clipped to max_norm (and left
    alone when max_norm is above their norm); the optimizer given steps once with them (the float32 weights
    change by exactly that step); their norm before clipping returned; then scaler.update() sets the new
    scale."""
    amp = inputs["amp_train_step"]
    lr, scale = amp["lr"], amp["init_scale"]
    # The run where nothing needs clipping first: there, clipping the scaled gradients and unscaling twice
    # leave different updates (where clipping bites, both cut the step to 1/scale).
    for name in ("loose", "bfloat16", "float16"):
        rec = _run(evidence, name, inputs)
        what, max_norm = _what(name, inputs), _max_norm(name, inputs)
        _, grads = _reference(inputs, _dtype(name))
        seen = rec["backward_grads"]
        expect(isinstance(seen, list) and len(seen) == len(grads) and all(g is not None for g in seen),
               f"{what}: backward() did not compute a gradient for every parameter")
        calls = [r["param"] for r in _records(rec, "backward")]
        expect(all(calls.count(i) == 1 for i in range(len(grads))),
               f"{what}: backward() ran {max(calls.count(i) for i in range(len(grads)))} times; run one backward "
               "pass, on the scaled loss")
        seen = [tensor(g, f"{what}: a gradient computed by backward()").float() for g in seen]
        for got, want in zip(seen, grads):
            expect(got.shape == want.shape,
                   f"{what}: a gradient has shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        if _all_near(seen, grads):
            raise Fail(f"{what}: backward() ran on the unscaled loss, so small float16 gradients would underflow; "
                       "call scaler.scale(loss).backward()")
        expect(_all_near([g / scale for g in seen], grads),
               f"{what}: the gradients computed by backward() are not the scale ({scale:g}) times the true ones; "
               "call scaler.scale(loss).backward() once")
        steps = _records(rec, "optimizer_steps")
        updates = _updates(rec, inputs, what)
        if not steps and any(bool((u != 0).any()) for u in updates):
            raise Fail(f"{what}: the parameters changed, but the optimizer passed in never stepped; step that "
                       "optimizer (through the scaler), do not make another")
        _check_step(rec, inputs, grads, max_norm, what)
        expect(len(steps) == 1, f"{what}: the optimizer stepped {len(steps)} times; step it once, through "
               "scaler.step(optimizer)")
        exact = _clipped([g * (1 / scale) for g in seen], max_norm)        # from the answer's own gradients
        for update, start, g in zip(updates, amp["state"].values(), exact):
            expect(bool(((start + update) - (start + (-lr * g))).abs().max() <= 1e-6),
                   f"{what}: the weights did not change by exactly one step with the clipped true gradients; keep "
                   "them float32 all along (converting them to a lower precision and back loses their low bits)")
        _check_norm(rec, grads, max_norm, scale, what)
        expect(len(_records(rec, "updates")) == 1, f"{what}: scaler.update() was called "
               f"{len(_records(rec, 'updates'))} times; call it once, after scaler.step(optimizer): it grows or cuts "
               "the scale by the scaler's own rules (setting the scale yourself skips them)")
        expect(not any(u["given"] for u in _records(rec, "updates")),
               f"{what}: scaler.update() was handed a new scale; call it without one, so the scaler applies its "
               "own growth and backoff")
        expect(rec["scale"] == 2 * scale,
               f"{what}: after a clean step the scale should grow from {scale:g} to {2 * scale:g} "
               f"(growth_interval=1), but it is {rec['scale']:g}; call scaler.update() once after "
               "scaler.step(optimizer)")


def amp_overflow(evidence: Evidence, inputs: dict) -> None:
    """Clause 6's second half and 7's overflowed norm: the step goes through scaler.step, which steps the
    optimizer after a clean backward and skips it when the gradients overflowed; update() then cuts the
    scale; the norm returned is inf or nan."""
    clean = _run(evidence, "bfloat16", inputs)
    steps = _records(clean, "optimizer_steps")
    expect(all(s["via_scaler"] for s in steps),  # no step at all: amp_scaled's business
           f"{_what('bfloat16', inputs)}: the optimizer was not stepped by scaler.step(optimizer); call "
           "scaler.step(optimizer) (not optimizer.step()), so that a step with inf/NaN gradients is skipped")
    rec = _run(evidence, "overflow", inputs)
    amp = inputs["amp_train_step"]
    what = _what("overflow", inputs)
    expect(len(_records(rec, "scaler_steps")) == 1,
           f"{what}: scaler.step(optimizer) was not called once; it is what checks the gradients for inf/NaN "
           "and skips the step")
    for update in _updates(rec, inputs, what):
        expect(bool((update == 0).all()),
               f"{what}: the parameters changed; a step with inf/NaN gradients must be skipped: let "
               "scaler.step(optimizer) call the optimizer")
    expect(not _records(rec, "optimizer_steps"),
           f"{what}: the optimizer stepped although the gradients held inf/NaN; let scaler.step(optimizer) decide")
    expect(rec["scale"] == amp["overflow_scale"] / 2,
           f"{what}: after the overflow scaler.update() should halve the scale to {amp['overflow_scale'] / 2:g}, but it is "
           f"{rec['scale']:g}")
    norm = rec["norm"]
    if isinstance(clean["norm"], float):  # a norm that never is a float: amp_scaled's business
        expect(isinstance(norm, float) and not math.isfinite(norm),
               f"{what} returned the norm {norm}; the gradients overflowed, so their total norm is inf or nan: "
               "return the norm measured on this step's gradients, before clipping")


def amp_fresh(evidence: Evidence, inputs: dict) -> None:
    """Clauses 1 and 8: gradients from earlier steps do not reach the step (the weights move as in the same
    step from clean gradients), and when the call returns .grad holds this step's true, clipped gradients."""
    amp = inputs["amp_train_step"]
    lr, scale, max_norm = amp["lr"], amp["init_scale"], amp["max_norm"]
    _, grads = _reference(inputs, "bfloat16")
    wanted = _clipped(grads, max_norm)
    clean, what = _run(evidence, "bfloat16", inputs), _what("bfloat16", inputs)
    clean_updates = _updates(clean, inputs, what)
    stale = _run(evidence, "stale", inputs)
    stale_updates = _updates(stale, inputs, _what("stale", inputs))
    right = _all_near(stale_updates, [-lr * g for g in wanted])
    # Where the step itself is wrong (amp_scaled's business), the same wrong step from stale gradients
    # still shows whether they leaked in.
    same = any(bool((u != 0).any()) for u in clean_updates) and _all_near(stale_updates, clean_updates, 1e-3)
    expect(right or same, f"{_what('stale', inputs)}: the parameters moved differently than in the same step "
           "from clean gradients: the old gradients leaked into this step; clear them first")
    after = clean["grads_after"]
    expect(isinstance(after, list) and len(after) == len(grads), f"{what}: the gradients after the call are missing")
    for got, want, update in zip(after, wanted, clean_updates):
        expect(got is not None, f"{what}: after the call the parameters hold no gradient; clear the gradients at the "
               "start of the step (not at its end), so that this step's stay in .grad")
        got = tensor(got, f"{what}: a gradient left in .grad").float()
        expect(got.shape == want.shape, f"{what}: a gradient left in .grad has shape {tuple(got.shape)}, expected "
               f"{tuple(want.shape)}")
        applied = -update / lr                   # what the step used, where that is wrong (amp_scaled's business)
        if _near(got, want) or (bool((update != 0).any()) and _near(got, applied)):
            continue
        expect(not _near(got / scale, want),
               f"{what}: after the call .grad holds this step's gradients still multiplied by the scale ({scale:g}); "
               "leave the true, clipped gradients there")
        raise Fail(f"{what}: after the call .grad does not hold this step's true gradients clipped to max_norm; clear "
                   "the gradients at the start of the step only")


# ---- exercise 2: pad_to_multiple, pad_linear ------------------------------------------------------

def _padded(x: torch.Tensor, multiple: int, dim: int) -> torch.Tensor:
    dim %= x.dim()
    shape = list(x.shape)
    shape[dim] += -shape[dim] % multiple
    out = torch.zeros(shape, dtype=x.dtype)
    out[tuple(slice(0, n) for n in x.shape)] = x
    return out


def _on_cpu(form, what: str, default: str | None) -> None:
    """The result lives where its input does (the CPU), not on the default device."""
    if isinstance(form, dict) and form["device"] != "cpu":
        made = ", the default device," if form["device"] == default else ""
        raise Fail(f"{what}: the result is on {form['device']}{made} but its input is on cpu; create every new "
                   "tensor on the input's device (device=..., x.new_zeros, F.pad)")


def pad_to_multiple(evidence: Evidence, inputs: dict) -> None:
    """Zeros appended along ``dim`` (negative counts from the end) up to the next multiple; dtype (half,
    bfloat16, int) and device (under another default device) kept, other sizes and values too; x untouched;
    gradients flow back to x."""
    results = evidence.probe("padding")["to_multiple"]
    for case, rec in zip(inputs["padding"]["pad_cases"], results, strict=True):
        x = case["x"]
        args = ", ".join(f"{k}={case[k]}" for k in ("multiple", "dim") if case.get(k) is not None)
        what = f"pad_to_multiple(x of shape {tuple(x.shape)}, {x.dtype}{', ' + args if args else ''})"
        if case.get("default_device"):
            what += f" with {case['default_device']} as the default device"
        if case.get("grad"):
            what += " with x requiring grad"
        rec = value(rec, what)
        _untouched(rec["replaced"], what)
        if rec.get("moved") is True and case.get("default_device"):
            continue  # it moved what it made on the default device to x's device: right on a real device
        want = _padded(x, case["multiple"] or 8, -1 if case["dim"] is None else case["dim"])
        _on_cpu(rec["form"], what, case.get("default_device"))
        got = tensor(rec["out"], what)
        expect(got.shape == want.shape, f"{what} has shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        equal(got, want, f"{what} (the original values first, then zeros)")
        equal(rec["input_after"], x, f"{what}: x itself must not be modified")
        if case.get("grad"):
            expect(rec["requires_grad"] is True, f"{what}: the result does not require grad, so no gradient can flow "
                   "back to x; build it from x with differentiable operations (no .detach(), .data or no_grad)")
            grad = rec.get("grad")
            expect(grad is not None, f"{what}: the result is not connected to x; no gradient reaches x")
            wanted = case["weights"][tuple(slice(0, n) for n in x.shape)]
            close(grad, wanted, f"{what}: the gradient that flows back to x (the result's gradient at x's entries)")


def pad_linear(evidence: Evidence, inputs: dict) -> None:
    """A new nn.Linear (even when nothing needs padding) sharing no tensor with the original; features rounded
    up; weight and bias padded with zeros; same dtype (half, bfloat16) and device (under another default
    device); trainable parameters; the original untouched."""
    results = evidence.probe("padding")["linear"]
    for case, rec in zip(inputs["padding"]["linear_cases"], results, strict=True):
        what = (f"pad_linear(nn.Linear({case['in']}, {case['out']}, bias={case['bias']}, dtype=torch.{case['dtype']})"
                + (f", {case['multiple']})" if case["multiple"] else ") with the default multiple (8)"))
        if case.get("default_device"):
            what += f" with {case['default_device']} as the default device"
        if case.get("frozen"):
            what += " of a frozen layer (requires_grad False)"
        rec = value(rec, what)
        _untouched(rec["replaced"], what)
        if rec.get("moved") is True and case.get("default_device"):
            continue  # it moved a layer made on the default device to the original's device: right on a real device
        m = case["multiple"] or 8
        n_in, n_out = case["in"] + -case["in"] % m, case["out"] + -case["out"] % m
        expect(rec["is_linear"] is True, f"{what} should return an nn.Linear")
        expect(rec["same_object"] is False, f"{what} returned the layer it was given; return a new nn.Linear, also "
               "when both sizes already are multiples")
        expect(rec["shares"] is False, f"{what}: the new layer shares a tensor with the original, so training one "
               "changes the other; give the new layer tensors of its own")
        expect((rec["in_features"], rec["out_features"]) == (n_in, n_out),
               f"{what} should have {n_in} -> {n_out} features, got {rec['in_features']} -> {rec['out_features']}")
        for form, part in zip(rec["forms"], ("weight", "bias")):
            _on_cpu(form, f"{what}: its {part}", case.get("default_device"))
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
            expect(rec["bias_trainable"] is True, f"{what}: its bias should be an nn.Parameter that requires grad")
        else:
            expect(rec["bias"] is None, f"{what}: a layer without bias should stay without bias")
        x = F.pad(case["x"].to(dtype), (0, n_in - case["in"]))
        tol = 1e-5 if dtype in (torch.float32, torch.float64) else 1e-2
        close(value(rec["out"], f"{what}: its forward pass"), F.linear(x, weight, bias),
              f"{what}: its output on a zero-padded input", rtol=tol, atol=tol)
        equal(rec["original_weight"], case["state"]["weight"], f"{what}: the original layer must not be modified")
        if case["bias"]:
            equal(rec["original_bias"], case["state"]["bias"], f"{what}: the original layer must not be modified")


CHECKS = AssignmentChecks(
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
