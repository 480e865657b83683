"""Checks for 03_building_models: DeepMLP (T039) and fold_input_scale (T047)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import AssignmentChecks, Evidence, close, equal, expect, tensor, value

CONFIGS = [[5, 7, 3, 0], [5, 7, 3, 1], [5, 7, 3, 2], [4, 9, 2, 3], [3, 6, 8, 6]]
FOLD_CASES = [  # conv hyperparameters, has bias, scale, input H x W
    (dict(in_channels=3, out_channels=8, kernel_size=3, padding=1), True, 1 / 255, (10, 10)),
    (dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1, groups=2), False, 0.5, (9, 9)),
    (dict(in_channels=3, out_channels=5, kernel_size=(3, 5), stride=(1, 2), padding=(1, 2)), True, 2.5, (7, 11)),
    (dict(in_channels=2, out_channels=4, kernel_size=3, dilation=2, padding=2), True, -0.75, (9, 9)),
    (dict(in_channels=6, out_channels=6, kernel_size=3, groups=3, padding=1), True, 1 / 255, (8, 8)),
    (dict(in_channels=3, out_channels=2, kernel_size=1), False, 3.0, (5, 4)),
    (dict(in_channels=1, out_channels=3, kernel_size=4, stride=3), True, 0.1, (13, 10)),
]
HYPER = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups")


def inputs() -> dict:
    g = torch.Generator().manual_seed(303)
    cases = []
    for hyper, has_bias, scale, (h, w) in FOLD_CASES:
        reference = nn.Conv2d(**hyper, bias=has_bias)
        cases.append({
            "hyper": hyper, "scale": scale,
            "weight": torch.randn(reference.weight.shape, generator=g) * 0.3,
            "bias": torch.rand(hyper["out_channels"], generator=g) * 2 - 1 if has_bias else None,
            "x": torch.randn(2, hyper["in_channels"], h, w, generator=g) * 10,
        })
    return {"deep_mlp": {"configs": CONFIGS, "x": torch.randn(16, 9, generator=g)},
            "fold_input_scale": {"cases": cases}}


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


def _count(i, h, o, n):
    return (i * h + h) + n * (h * h + h) + (h * o + o)


def deep_mlp_moves(evidence: Evidence, inputs: dict) -> None:
    for config, x, rec in _runs(evidence, inputs, "moved"):
        name, n_params = f"DeepMLP{tuple(config)}", 2 * (config[3] + 2)
        expect(rec["dtypes"] == ["torch.float64"] * n_params,
               f"{name}: after .to(torch.float64) not every parameter is float64")
        close(rec["output"], _forward(rec["linears"], x.double(), config), f"{name} in float64", atol=1e-9)
        expect(rec["meta_devices"] == ["meta"] * n_params, f"{name}: after .to('meta') some layers stayed behind")
        expect(value(rec["meta_output"], f"{name} on meta") == ["meta", [x.shape[0], config[2]]],
               f"{name}: a forward pass on the meta device failed")


def deep_mlp_forward(evidence: Evidence, inputs: dict) -> None:
    for config, x, rec in _runs(evidence, inputs, "plain"):
        name = f"DeepMLP{tuple(config)}"
        expected = _forward(rec["linears"], x, config)
        close(rec["output"], expected, f"{name}: output of Linear -> ReLU -> ... -> Linear (no ReLU at the end)")
        expect(value(rec["grads"], f"{name} backward") == [True] * (2 * (config[3] + 2)),
               f"{name}: after backward() some parameters have no gradient")
        close(rec["output_eval"], expected, f"{name}: output in eval() mode")


# ---- fold_input_scale ------------------------------------------------------------------------

def _fold_runs(evidence: Evidence, inputs: dict):
    results = evidence.probe("fold_input_scale")
    cases = inputs["fold_input_scale"]["cases"]
    expect(isinstance(results, list) and len(results) == len(cases), "fold_input_scale could not be probed")
    for case, result in zip(cases, results):
        rec = value(result, f"fold_input_scale for {case['hyper']}")
        expect(rec["type_is_conv2d"] is True, f"fold_input_scale returned {rec['type_name']}, expected exactly nn.Conv2d")
        yield case, rec


def _conv(case: dict, x, weight, bias) -> torch.Tensor:
    ref = nn.Conv2d(**case["hyper"], bias=False)
    return F.conv2d(x, weight, bias, ref.stride, ref.padding, ref.dilation, ref.groups)


def fold_matches(evidence: Evidence, inputs: dict, cases: slice = slice(None)) -> None:
    for case, rec in list(_fold_runs(evidence, inputs))[cases]:
        what = f"fold_input_scale(conv {case['hyper']}, scale={case['scale']:.4g})"
        ref = nn.Conv2d(**case["hyper"], bias=case["bias"] is not None)
        for attr in HYPER:
            want = getattr(ref, attr)
            want = list(want) if isinstance(want, tuple) else want
            expect(rec["hyper"][attr] == want, f"{what}: {attr} is {rec['hyper'][attr]}, expected {want}")
        expect((rec["bias"] is None) == (case["bias"] is None), f"{what}: the result must have a bias exactly when conv has one")
        expected = _conv(case, case["x"] * case["scale"], case["weight"], case["bias"])
        close(rec["output"], expected, f"{what}: new(x) vs conv(x * scale)", rtol=1e-4, atol=1e-3)
        own = _conv(case, case["x"], tensor(rec["weight"], "the new weight"),
                    None if rec["bias"] is None else tensor(rec["bias"], "the new bias"))
        close(own, expected, f"{what}: the returned layer's own weights", rtol=1e-4, atol=1e-3)


def fold_safe(evidence: Evidence, inputs: dict) -> None:
    fold_matches(evidence, inputs, slice(0, 1))  # safe AND working: an empty new layer earns nothing
    for case, rec in _fold_runs(evidence, inputs):
        what = f"fold_input_scale(conv {case['hyper']})"
        for moment in ("input_after_call", "input_after_edit"):
            equal(rec[moment]["weight"], case["weight"], f"{what}: the input conv's weight must not change")
            if case["bias"] is not None:
                equal(rec[moment]["bias"], case["bias"], f"{what}: the input conv's bias must not change")
        expect(rec["shares_objects"] is False, f"{what}: return a new layer with its own parameters")
        expect(rec["params_are_parameters"] is True, f"{what}: the weights should be nn.Parameters")
        want = ["bias", "weight"] if case["bias"] is not None else ["weight"]
        expect(rec["param_names"] == want, f"{what}: the result should have exactly the parameters {want}")


CHECKS = AssignmentChecks(
    assignment="03_building_models",
    probe_module="building_models",
    inputs=inputs,
    tests={
        "test_deep_mlp_registered": deep_mlp_registered,
        "test_deep_mlp_moves": deep_mlp_moves,
        "test_deep_mlp_forward": deep_mlp_forward,
        "test_fold_input_scale_matches": fold_matches,
        "test_fold_input_scale_safe": fold_safe,
    },
)
