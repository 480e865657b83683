"""Checks for 03_building_models: DeepMLP (T039) and fold_normalize (T047).

DeepMLP's clauses (the notebook's Exercise 1) and where each is checked; what is registered is read from
each module's own registry in the sandbox (not through methods an answer can override):
  1 Linear(in -> hidden), ReLU, num_hidden_layers x [Linear(hidden -> hidden), ReLU], Linear(hidden -> out),
    no ReLU at the end (outputs made mostly negative to show one); num_hidden_layers = 0 works;
    the same in eval() mode; gradients reach every parameter ................................... deep_mlp_forward
  2 exactly num_hidden_layers + 2 nn.Linear layers, each with its own weight and a bias ........ deep_mlp_registered
  3 every layer registered, once: parameters() holds each tensor once, state_dict() each weight
    under one name (its numbers add up) ....................................................... deep_mlp_registered
  4 registered in the order forward applies them: named_modules() and state_dict() list the layers
    input, hidden..., output (an output layer registered first fails); forward applies them in that
    order (the hidden layers' order shows in the output) ........ deep_mlp_registered, deep_mlp_forward
  5 .to(float64) and .to("meta") reach every layer; forward creates no tensor of its own (model and
    input on the CPU under meta as the default device stay on the CPU) ........................ deep_mlp_moves
fold_normalize's clauses (Exercise 2):
  1 a new, plain nn.Conv2d with new(x) == conv((x - mean) / std): any kernel, stride, dilation, groups,
    with and without a bias, float32 and float64 ............................................. fold_matches
  2 conv's hyperparameters (padding_mode included), and always a bias ........ fold_matches, fold_padding
  3 reflect / replicate / circular padding: exact, borders included ............................ fold_padding
  4 zero padding > 0 in either direction raises ValueError with a message ....................... fold_padding
  5 its own parameters (nn.Parameter, named weight and bias, sharing nothing with conv), conv's dtype,
    and conv's device (conv on meta gives a layer on meta) ....................................... fold_safe
  6 conv, mean and std unmodified (after the call, and after the new layer is edited) ............. fold_safe
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from grader.checking import AssignmentChecks, Evidence, close, equal, expect, needs_data, tensor, value

CONFIGS = [[5, 7, 3, 0], [5, 7, 3, 1], [5, 7, 3, 2], [4, 9, 2, 3], [3, 6, 8, 6]]
FOLD_CASES = [  # conv hyperparameters, has bias, dtype, input H x W; zero padding only with padding 0
    (dict(in_channels=3, out_channels=8, kernel_size=3), True, torch.float32, (10, 10)),
    (dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, groups=2), False, torch.float32, (9, 9)),
    (dict(in_channels=3, out_channels=5, kernel_size=(3, 5), stride=(1, 2)), True, torch.float32, (7, 11)),
    (dict(in_channels=2, out_channels=4, kernel_size=3, dilation=2), True, torch.float32, (9, 9)),
    (dict(in_channels=6, out_channels=6, kernel_size=3, groups=3), True, torch.float32, (8, 8)),
    (dict(in_channels=6, out_channels=6, kernel_size=3, groups=6), False, torch.float32, (8, 8)),
    (dict(in_channels=3, out_channels=2, kernel_size=1), False, torch.float32, (5, 4)),
    (dict(in_channels=1, out_channels=3, kernel_size=4, stride=3), True, torch.float32, (13, 10)),
    (dict(in_channels=4, out_channels=8, kernel_size=(2, 3), groups=4, dilation=(2, 1)), True, torch.float64, (9, 9)),
    # padding that copies real pixels: the fold stays exact at the borders
    (dict(in_channels=3, out_channels=4, kernel_size=3, padding=1, padding_mode="reflect"), True, torch.float32, (8, 8)),
    (dict(in_channels=4, out_channels=6, kernel_size=3, padding=(2, 1), padding_mode="replicate", groups=2),
     False, torch.float32, (7, 9)),
    (dict(in_channels=2, out_channels=3, kernel_size=(3, 5), stride=2, padding=(1, 2), padding_mode="circular"),
     True, torch.float32, (9, 10)),
]
ZERO_PADDED = [  # zero padding > 0 in some direction: the fold cannot be exact, ValueError expected
    (dict(in_channels=3, out_channels=4, kernel_size=3, padding=1), True),
    (dict(in_channels=4, out_channels=4, kernel_size=(1, 3), padding=(0, 1), groups=2), True),
    (dict(in_channels=2, out_channels=2, kernel_size=3, stride=2, padding=(2, 0)), False),
]
META_CASES = [1, 8]  # FOLD_CASES run again with conv, mean and std on the meta device (as on a GPU)
HYPER = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "padding_mode")


def inputs() -> dict:
    g = torch.Generator().manual_seed(303)
    cases = []
    for hyper, has_bias, dtype, (h, w) in FOLD_CASES:
        c = hyper["in_channels"]
        reference = nn.Conv2d(**hyper, bias=has_bias)
        cases.append({
            "hyper": hyper, "dtype": str(dtype).removeprefix("torch."),
            "weight": (torch.randn(reference.weight.shape, generator=g) * 0.3).to(dtype),
            "bias": (torch.rand(hyper["out_channels"], generator=g) * 2 - 1).to(dtype) if has_bias else None,
            "mean": torch.rand(c, generator=g) * 160 + 40,    # raw pixel units, different per channel
            "std": torch.rand(c, generator=g) * 50 + 15,
            "x": torch.randint(0, 256, (2, c, h, w), generator=g).to(dtype),
        })
    zero_padded = [{"hyper": hyper, "has_bias": has_bias, "mean": torch.rand(hyper["in_channels"], generator=g) * 200,
                    "std": torch.rand(hyper["in_channels"], generator=g) * 50 + 15} for hyper, has_bias in ZERO_PADDED]
    return {"deep_mlp": {"configs": CONFIGS, "x": torch.randn(16, 9, generator=g)},
            "fold_normalize": {"cases": cases, "zero_padded": zero_padded, "meta": META_CASES}}


# ---- DeepMLP ---------------------------------------------------------------------------------

def _expected_shapes(i, h, o, n):
    return sorted([(h, i), (h,)] + [(h, h), (h,)] * n + [(o, h), (o,)])


def _runs(evidence: Evidence, inputs: dict, part: str):
    results = evidence.probe("deep_mlp")
    expect(isinstance(results, list) and len(results) == len(CONFIGS), "DeepMLP could not be probed")
    for config, result in zip(CONFIGS, results):
        yield config, inputs["deep_mlp"]["x"][:, : config[0]], value(result[part], f"DeepMLP{tuple(config)}")


def _forward(linears: list, x: torch.Tensor, config) -> torch.Tensor:
    """Linear -> ReLU -> ... -> Linear computed here from the layers the student's model holds."""
    i, _, o, n = config
    expect(len(linears) == n + 2, f"DeepMLP{tuple(config)} has {len(linears)} nn.Linear layers, expected {n + 2}")
    weights = [(tensor(l["weight"], "a Linear weight"), l["bias"]) for l in linears]
    first = [wb for wb in weights if wb[0].shape[1] == i]
    last = [wb for wb in weights if wb[0].shape[0] == o]
    expect(len(first) == 1 and len(last) == 1, f"DeepMLP{tuple(config)}: expected one input and one output layer")
    middle = [wb for wb in weights if wb is not first[0] and wb is not last[0]]
    out = F.relu(F.linear(x, first[0][0], first[0][1]))
    for w, b in middle:
        out = F.relu(F.linear(out, w, b))
    return F.linear(out, last[0][0], last[0][1])


def deep_mlp_registered(evidence: Evidence, inputs: dict) -> None:
    for config, _, rec in _runs(evidence, inputs, "plain"):
        name, count = f"DeepMLP{tuple(config)}", _count(*config)
        shapes = sorted(tuple(s) for s in rec["param_shapes"])  # what an optimizer would be given
        expect(shapes == _expected_shapes(*config),
               f"{name}: parameters() holds {len(shapes)} tensors, expected {2 * (config[3] + 2)}: "
               "are all layers registered (not kept in a plain Python list)?")
        expect(rec["param_objects_unique"] is True, f"{name}: parameters() yields the same tensor twice")
        state = {k: tensor(v, f"{name}.state_dict()[{k!r}]") for k, v in rec["state_dict"].items()}
        expect(sum(t.numel() for t in state.values()) == count,
               f"{name}: state_dict() holds {sum(t.numel() for t in state.values())} numbers, expected {count}")
        expect(len(rec["linears"]) == config[3] + 2,
               f"{name} has {len(rec['linears'])} nn.Linear layers, expected {config[3] + 2}")
        for layer in rec["linears"]:
            expect(layer["bias"] is not None, f"{name}: every Linear layer should keep its bias")
        # registered in the order forward applies them (forward's order itself: deep_mlp_forward), as
        # named_modules() and state_dict() list them: input layer, hidden layers, output layer
        i, h, o, n = config
        order = [(h, i)] + [(h, h)] * n + [(o, h)]
        seen = [tuple(tensor(l["weight"], f"{name}: a Linear weight").shape) for l in rec["linears"]]
        expect(seen == order, f"{name}: named_modules() lists the Linear layers as {_layers(seen)}, expected "
                              f"{_layers(order)}: register each layer in the order forward applies it")
        weights = [tuple(t.shape) for k, t in state.items() if t.dim() == 2]
        expect(weights == order, f"{name}: state_dict() lists the weights as {_layers(weights)}, expected "
                                 f"{_layers(order)}: register each layer in the order forward applies it")


def _layers(shapes) -> str:
    return ", ".join(f"{s[1]}->{s[0]}" if len(s) == 2 else str(s) for s in shapes)


def _count(i, h, o, n):
    return (i * h + h) + n * (h * h + h) + (h * o + o)


def deep_mlp_moves(evidence: Evidence, inputs: dict) -> None:
    for config, x, rec in _runs(evidence, inputs, "moved"):
        name, n_params = f"DeepMLP{tuple(config)}", 2 * (config[3] + 2)
        expect(rec["dtypes"] == ["torch.float64"] * n_params,
               f"{name}: after .to(torch.float64) not every parameter is float64")
        close(rec["output"], _forward(rec["linears"], x.double(), config), f"{name} in float64", atol=1e-9)
        expect(rec["meta_devices"] == ["meta"] * n_params, f"{name}: after .to('meta') some layers stayed behind")
        expect(value(rec["other_default_output"], f"{name} with meta as the default device")
               == ["cpu", [x.shape[0], config[2]]],
               f"{name}: with the model and its input on the CPU and another default device, the forward pass "
               "did not stay on the CPU: create every tensor on the input's device")


def deep_mlp_forward(evidence: Evidence, inputs: dict) -> None:
    for config, x, rec in _runs(evidence, inputs, "plain"):
        name = f"DeepMLP{tuple(config)}"
        expected = _forward(rec["linears"], x, config)
        close(rec["output"], expected, f"{name}: output of Linear -> ReLU -> ... -> Linear (no ReLU at the end)")
        expect(value(rec["grads"], f"{name} backward") == [True] * (2 * (config[3] + 2)),
               f"{name}: after backward() some parameters have no gradient")
        close(rec["output_eval"], expected, f"{name}: output in eval() mode")


# ---- fold_normalize ----------------------------------------------------------------------------

def _fold_runs(evidence: Evidence, inputs: dict, padded: bool | None = None):
    """(case, record) for the fold cases; padded=True/False keeps only those with/without padding."""
    results = evidence.probe("fold_normalize")
    cases = inputs["fold_normalize"]["cases"]
    expect(isinstance(results, dict) and isinstance(results.get("cases"), list)
           and len(results["cases"]) == len(cases), "fold_normalize could not be probed")
    for case, result in zip(cases, results["cases"]):
        if padded is not None and _copies_pixels(case) != padded:
            continue
        rec = value(result, f"fold_normalize for {_describe(case)}")
        expect(rec["type_is_conv2d"] is True, f"fold_normalize returned {rec['type_name']}, expected exactly nn.Conv2d")
        yield case, rec


def _copies_pixels(case: dict) -> bool:
    return case["hyper"].get("padding_mode", "zeros") != "zeros"


def _describe(case: dict) -> str:
    bias = "" if case["bias"] is not None else ", bias=False"
    dtype = "" if case["dtype"] == "float32" else f", dtype={case['dtype']}"
    return "Conv2d(" + ", ".join(f"{k}={v!r}" for k, v in case["hyper"].items()) + bias + dtype + ")"


def _conv64(case: dict, weight, bias) -> nn.Conv2d:
    """A float64 layer with the case's hyperparameters (padding mode included) and the given weights."""
    layer = nn.Conv2d(**case["hyper"], bias=bias is not None, dtype=torch.float64)
    with torch.no_grad():
        layer.weight.copy_(weight)
        if bias is not None:
            layer.bias.copy_(bias)
    return layer


def _check_case(case: dict, rec: dict) -> None:
    what = f"fold_normalize({_describe(case)}, mean, std)"
    ref = nn.Conv2d(**case["hyper"])
    for attr in HYPER:
        want = getattr(ref, attr)
        want = list(want) if isinstance(want, tuple) else want
        expect(rec["hyper"][attr] == want, f"{what}: {attr} is {rec['hyper'][attr]!r}, expected {want!r}")
    expect(rec["bias"] is not None, f"{what}: the result has no bias; the mean shift has to go into one "
                                    "(even when conv has no bias)")
    x, mean, std = case["x"].double(), case["mean"].double().view(1, -1, 1, 1), case["std"].double().view(1, -1, 1, 1)
    with torch.no_grad():
        expected = _conv64(case, case["weight"], case["bias"])((x - mean) / std)
        output = tensor(rec["output"], f"{what}: new(x)")
        close(output.double(), expected, f"{what}: new(x) vs conv((x - mean) / std)", rtol=1e-4, atol=1e-4)
        own = _conv64(case, tensor(rec["weight"], "the new weight"), tensor(rec["bias"], "the new bias"))(x)
        close(own, expected, f"{what}: the returned layer's own weight and bias", rtol=1e-4, atol=1e-4)


def fold_matches(evidence: Evidence, inputs: dict, cases: slice = slice(None)) -> None:
    for case, rec in list(_fold_runs(evidence, inputs, padded=False))[cases]:
        _check_case(case, rec)


def fold_padding(evidence: Evidence, inputs: dict) -> None:
    for case, rec in _fold_runs(evidence, inputs, padded=True):  # reflect / replicate / circular: exact
        _check_case(case, rec)
    outcomes = evidence.probe("fold_normalize")["zero_padded"]
    cases = inputs["fold_normalize"]["zero_padded"]
    expect(isinstance(outcomes, list) and len(outcomes) == len(cases), "fold_normalize could not be probed")
    for case, outcome in zip(cases, outcomes):
        call = "fold_normalize(Conv2d(" + ", ".join(f"{k}={v!r}" for k, v in case["hyper"].items()) + "), mean, std)"
        expect(isinstance(outcome, dict), f"{call} could not be probed")
        if "raised" in outcome:
            names = outcome["raised"]
            expect(isinstance(names, list) and "ValueError" in names,
                   f"{call} raised {str(names[0] if names else '?')[:80]}, expected ValueError "
                   f"(zero padding: the fold cannot be exact at the borders)")
            expect(bool(str(outcome.get("message", "")).strip()),
                   f"{call}: give the ValueError a message that says why zero padding cannot be folded")
        else:
            expect(False, f"{call} returned a {str(outcome.get('returned'))[:80]}; with zero padding the fold cannot "
                          "be exact at the borders, so it should raise ValueError")


def fold_safe(evidence: Evidence, inputs: dict) -> None:
    fold_matches(evidence, inputs, slice(0, 1))  # safe AND working: an empty new layer earns nothing
    for case, rec in _fold_runs(evidence, inputs):
        what = f"fold_normalize({_describe(case)}, mean, std)"
        for moment in ("input_after_call", "input_after_edit"):
            equal(rec[moment]["weight"], case["weight"], f"{what}: the input conv's weight must not change")
            expect((rec[moment]["bias"] is None) == (case["bias"] is None), f"{what}: the input conv's bias must not change")
            if case["bias"] is not None:
                equal(rec[moment]["bias"], case["bias"], f"{what}: the input conv's bias must not change")
        equal(rec["mean_after"], case["mean"], f"{what}: mean must not change")
        equal(rec["std_after"], case["std"], f"{what}: std must not change")
        expect(rec["shares_objects"] is False, f"{what}: return a new layer with its own parameters (no shared tensors)")
        expect(rec["params_are_parameters"] is True, f"{what}: the weights should be nn.Parameters")
        expect(rec["param_names"] == ["bias", "weight"], f"{what}: the result should have exactly the parameters "
                                                         f"['bias', 'weight'], found {rec['param_names']}")
        expect(rec["dtypes"] == [case["dtype"]] * 2, f"{what}: the result's parameters are {rec['dtypes']}, "
                                                     f"expected conv's dtype {case['dtype']}")
    cases = inputs["fold_normalize"]["cases"]
    for i, rec in zip(inputs["fold_normalize"]["meta"], evidence.probe("fold_normalize")["meta"], strict=True):
        what = f"fold_normalize({_describe(cases[i])}, mean, std) with conv, mean and std on the meta device"
        if needs_data(rec):
            continue  # the answer reads values, which meta tensors do not hold: this case cannot tell
        devices = value(rec, what + " (meta stands in for a GPU: build the new layer on conv.weight.device)")
        expect(devices == ["meta", "meta"], f"{what}: the result's parameters are on {devices}, expected conv's "
                                            "device: create the new layer on conv.weight.device")



CHECKS = AssignmentChecks(
    inputs=inputs,
    tests={
        "test_deep_mlp_registered": deep_mlp_registered,
        "test_deep_mlp_moves": deep_mlp_moves,
        "test_deep_mlp_forward": deep_mlp_forward,
        "test_fold_normalize_matches": fold_matches,
        "test_fold_normalize_padding": fold_padding,
        "test_fold_normalize_safe": fold_safe,
    },
)
