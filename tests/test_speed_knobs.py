"""utils.speed_knobs: switches are read, shapes never repeat and keep the work constant, the T088 aids."""
import copy
import itertools

import pytest
import torch

from utils import speed_knobs


def test_fresh_shapes_never_repeat_and_keep_the_pixel_count():
    pixels = 32 * 64 * 64
    shapes = list(itertools.islice(speed_knobs.fresh_shapes(pixels), 3000))   # more than one pass over the pairs
    assert len(set(shapes)) == len(shapes)
    first_pass = shapes[:500]
    assert all(abs(n * h * w - pixels) <= 0.05 * pixels for n, h, w in first_pass)


def test_cpu_bf16_hardware_is_words():
    text = speed_knobs.cpu_bf16_hardware()
    assert isinstance(text, str) and "bfloat16" in text


def test_fresh_batches_are_new_shapes_of_about_the_same_size():
    batches = speed_knobs.fresh_batches(pixels=8 * 16 * 16, channels=3, device="cpu")
    shapes = [tuple(next(batches).shape) for _ in range(20)]
    assert len(set(shapes)) == 20 and all(s[1] == 3 for s in shapes)


def test_square_stack_does_about_the_same_arithmetic_at_every_size():
    flops = 2 * 64 ** 3
    for n in (8, 16, 32, 64):
        stack = speed_knobs.square_stack(n, flops, torch.float32, "cpu")
        assert tuple(stack.shape) == (speed_knobs.stack_count(n, flops), n, n)
        assert abs(stack.shape[0] * 2 * n ** 3 - flops) <= 0.01 * flops
    odd = speed_knobs.square_stack(16, flops, torch.float16, "cpu", size=15)
    assert tuple(odd.shape) == (64, 15, 15) and odd.dtype == torch.float16
    assert speed_knobs.stack_count(128, flops) == 1   # never fewer than one product


def test_models_have_the_asked_shapes():
    net = speed_knobs.conv_net(4)
    assert net(torch.randn(2, 3, 16, 16)).shape == (2, 10)
    mlp = speed_knobs.mlp(8, 16, 16, 4)
    assert [m.out_features for m in mlp if isinstance(m, torch.nn.Linear)] == [16, 16, 4]
    assert not isinstance(mlp[-1], torch.nn.ReLU)
    assert speed_knobs.training_flops(mlp, 10) == 6 * 10 * (8 * 16 + 16 * 16 + 16 * 4)
    assert speed_knobs.encoder(16, 2, 32, 1)(torch.randn(2, 5, 16)).shape == (2, 5, 16)


def test_gradient_step_and_backward_pass_return_one_gradient_per_parameter():
    torch.manual_seed(0)
    net = speed_knobs.conv_net(4).eval()
    images, labels = torch.randn(2, 3, 8, 8), torch.tensor([1, 2])
    grads = speed_knobs.gradient_step(net, images, labels)()
    assert len(grads) == len(list(net.parameters()))
    settings = []
    backward = speed_knobs.backward_pass(net, images, lambda: settings.append("set"))
    first, again = backward(), backward()          # the graph is built once and kept
    assert settings == ["set", "set"], "the setting runs before every call"
    assert len(first) == len(grads) and all(torch.equal(a, b) for a, b in zip(first, again))
    assert not net.training, "backward_pass trains a copy and leaves the net's mode alone"


def test_errors_against_a_reference():
    exact = torch.tensor([1.0, -2.0], dtype=torch.float64)
    errors = speed_knobs.errors_against(lambda: exact, same=lambda: exact.float(), off=lambda: exact.float() + 0.02)
    assert errors["same"] == 0.0 and errors["off"] == pytest.approx(0.01)


def test_device_facts_read_the_switches():
    facts = speed_knobs.device_facts(torch.device("cpu"))
    names = [row["name"] for row in facts.rows]
    assert "bfloat16 matrix hardware" in names and "torch.backends.cudnn.benchmark" in names


def test_scaler_row_reads_what_the_scaler_did():
    torch.manual_seed(0)
    tiny = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(tiny.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    rows = []
    for step, (name, inputs) in enumerate([("normal", torch.randn(8, 4)), ("normal", torch.randn(8, 4)),
                                           ("huge", torch.full((8, 4), 1e30))], 1):
        used, before = scaler.get_scale(), [p.detach().clone() for p in tiny.parameters()]
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.float16):
            loss = tiny(inputs).float().square().mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        rows.append(speed_knobs.scaler_row(step, name, loss, used, scaler, tiny, before))
    assert [r["step"] for r in rows] == [1, 2, 3] and rows[2]["batch"] == "huge"
    assert [r["optimizer step"] for r in rows] == ["taken", "taken", "skipped"]
    assert [r["scale used"] for r in rows] == ["4", "4", "8"]
    assert [r["update()"] for r in rows] == ["kept: 4", "doubled: 8", "halved: 4"]
    assert [r["gradients finite"] for r in rows] == [True, True, False]


def test_fine_tuning_task_is_a_linear_layer_near_its_targets():
    layer, inputs, targets = speed_knobs.fine_tuning_task(16, 64, "cpu")
    again = speed_knobs.fine_tuning_task(16, 64, "cpu")
    assert layer.bias is None and tuple(layer.weight.shape) == (1, 16)
    assert tuple(inputs.shape) == (64, 16) and tuple(targets.shape) == (64, 1)
    assert torch.equal(layer.weight, again[0].weight) and torch.equal(targets, again[2]), "the same seed, the same task"
    start = torch.nn.functional.mse_loss(layer(inputs), targets).item()
    assert 0.01 < start < 1.0, "the targets sit a small step away from the layer's weights"


def test_half_weights_lose_the_updates_that_float32_weights_keep():
    layer, inputs, targets = speed_knobs.fine_tuning_task(32, 128, "cpu")
    losses = {}
    for dtype in (torch.float32, torch.float16):
        model = copy.deepcopy(layer).to(dtype)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(200):
            optimizer.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(model(inputs.to(dtype)), targets.to(dtype)).backward()
            optimizer.step()
        losses[dtype] = torch.nn.functional.mse_loss(model.float()(inputs), targets).item()
    assert losses[torch.float16] > 10 * losses[torch.float32], losses
