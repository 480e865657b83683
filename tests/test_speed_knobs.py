"""utils.speed_knobs: switches are put back, shapes never repeat and keep the work constant."""
import itertools

import pytest
import torch

from utils import speed_knobs


def test_backend_flags_set_and_restore_even_after_an_error():
    before = speed_knobs.flags()
    with speed_knobs.backend_flags(cudnn_benchmark=not before["torch.backends.cudnn.benchmark"],
                                   cudnn_conv_precision="ieee", matmul_precision="tf32"):
        assert torch.backends.cudnn.benchmark is (not before["torch.backends.cudnn.benchmark"])
        assert torch.backends.cudnn.conv.fp32_precision == "ieee"
        assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    assert speed_knobs.flags() == before
    with pytest.raises(ZeroDivisionError), speed_knobs.backend_flags(matmul_precision="tf32"):
        1 / 0
    assert speed_knobs.flags() == before


def test_backend_flags_leave_unnamed_switches_alone():
    before = speed_knobs.flags()
    with speed_knobs.backend_flags(cudnn_benchmark=True):
        now = speed_knobs.flags()
        assert now["torch.backends.cudnn.conv.fp32_precision"] == before["torch.backends.cudnn.conv.fp32_precision"]
        assert now["torch.backends.cuda.matmul.fp32_precision"] == before["torch.backends.cuda.matmul.fp32_precision"]
    assert speed_knobs.flags() == before


def test_fresh_shapes_never_repeat_and_keep_the_pixel_count():
    pixels = 32 * 64 * 64
    shapes = list(itertools.islice(speed_knobs.fresh_shapes(pixels), 3000))   # more than one pass over the pairs
    assert len(set(shapes)) == len(shapes)
    first_pass = shapes[:500]
    assert all(abs(n * h * w - pixels) <= 0.05 * pixels for n, h, w in first_pass)


def test_cpu_bf16_hardware_is_words():
    text = speed_knobs.cpu_bf16_hardware()
    assert isinstance(text, str) and "bfloat16" in text


def test_autotuner_turns_benchmark_and_keeps_the_two_settings_apart():
    before = speed_knobs.flags()
    with speed_knobs.autotuner(True):
        assert torch.backends.cudnn.benchmark is True
        assert torch.backends.cudnn.conv.fp32_precision == "tf32"
    with speed_knobs.autotuner(False):
        assert torch.backends.cudnn.benchmark is False
        assert torch.backends.cudnn.conv.fp32_precision == "ieee"
    assert speed_knobs.flags() == before


def test_with_flags_sets_the_switches_for_each_call_only():
    before = speed_knobs.flags()
    seen = speed_knobs.with_flags(lambda: torch.backends.cuda.matmul.fp32_precision, matmul_precision="tf32")()
    assert seen == "tf32"
    assert speed_knobs.flags() == before


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


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16", "half"])
def test_training_step_trains_a_copy(kind):
    torch.manual_seed(0)
    model = speed_knobs.mlp(8, 16, 8)
    before = [p.detach().clone() for p in model.parameters()]
    x = torch.randn(4, 8)
    step = speed_knobs.training_step(model, x, torch.randn(4, 8), kind, lr=0.1)
    losses = [step().item() for _ in range(3)]
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before)), "the caller's model must not change"
    assert all(torch.isfinite(torch.tensor(losses))) and losses[-1] != losses[0]


def test_gradient_step_and_backward_pass_return_one_gradient_per_parameter():
    torch.manual_seed(0)
    net = speed_knobs.conv_net(4).eval()
    images, labels = torch.randn(2, 3, 8, 8), torch.tensor([1, 2])
    grads = speed_knobs.gradient_step(net, images, labels)()
    assert len(grads) == len(list(net.parameters()))
    backward = speed_knobs.backward_pass(net, images, lambda: speed_knobs.autotuner(False))
    first, again = backward(), backward()          # the graph is built once and kept
    assert len(first) == len(grads) and all(torch.equal(a, b) for a, b in zip(first, again))
    assert not net.training, "backward_pass trains a copy and leaves the net's mode alone"


def test_errors_against_a_reference():
    exact = torch.tensor([1.0, -2.0], dtype=torch.float64)
    errors = speed_knobs.errors_against(lambda: exact, same=lambda: exact.float(), off=lambda: exact.float() + 0.02)
    assert errors["same"] == 0.0 and errors["off"] == pytest.approx(0.01)


def test_scaler_steps_reads_what_the_scaler_did():
    torch.manual_seed(0)
    tiny = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(tiny.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    batches = [("normal", torch.randn(8, 4)), ("normal", torch.randn(8, 4)), ("huge", torch.full((8, 4), 1e30))]
    table = speed_knobs.scaler_steps(tiny, optimizer, scaler, batches, torch.float16)
    rows = table.rows
    assert table.caption.endswith("steps skipped: 3")
    assert [r["optimizer step"] for r in rows] == ["taken", "taken", "skipped"]
    assert [r["scale used"] for r in rows] == ["4", "4", "8"]
    assert [r["update()"] for r in rows] == ["kept: 4", "doubled: 8", "halved: 4"]
    assert [r["gradients finite"] for r in rows] == ["True", "True", "False"]


def test_device_facts_read_the_switches():
    facts = speed_knobs.device_facts(torch.device("cpu"))
    names = [row["name"] for row in facts.rows]
    assert "bfloat16 matrix hardware" in names and "torch.backends.cudnn.benchmark" in names
