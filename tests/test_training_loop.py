"""The measuring helpers of notebook 04 (utils/training_loop.py): what they count, on small models."""
import torch
from torch import nn

from utils.training_loop import decay_step_table, grads_held, held_per_value, make_data, make_mlp, png_sizes


def test_held_per_value_counts_a_kept_graph_and_nothing_for_a_float():
    net, loss_fn = make_mlp(32, device="cpu"), nn.CrossEntropyLoss()
    data = [make_data(16, seed=i, device="cpu") for i in range(3)]
    cases = {"loss": lambda: [loss_fn(net(x), y) for x, y in data],
             "loss.item()": lambda: [loss_fn(net(x), y).item() for x, y in data]}
    rows = {row["kept"]: row for row in held_per_value(cases, net, loss_fn, data, torch.device("cpu"))}
    assert rows["loss"]["÷ a step's activations"] == "1.00"      # each kept loss holds one step's saved activations
    assert rows["loss.item()"]["held per value"] == "0 B"


def test_grads_held_is_what_a_reset_leaves_allocated():
    model = nn.Linear(256, 256)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 256)

    def step():
        model(x).sum().backward()
        opt.step()
    assert grads_held(model, step, lambda: opt.zero_grad(set_to_none=False)) == "257.0 KiB"   # 256 * 257 floats
    assert grads_held(model, step, opt.zero_grad) == "0 B"


def test_decay_step_table_moves_only_the_decayed_group():
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))
    decay, no_decay = [model[0].weight], [model[0].bias, *model[1].parameters()]
    with torch.no_grad():
        model[1].weight.fill_(2.0)
        model[1].bias.fill_(1.0)
    opt = torch.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}], lr=0.1, weight_decay=0.1)
    rows = decay_step_table(model, opt)
    assert [(r["group"], r["max change"]) for r in rows] == [(0, "0.0100"), (1, "0.0000")]
    assert rows[1]["parameters"] == "0.bias, 1.weight, 1.bias"


def test_png_sizes_uses_the_given_encoder():
    from PIL import Image
    image = Image.new("RGB", (8, 8))
    rows = png_sizes({"black": image}, {"a": {"level": 1}}, lambda im, level: b"x" * (10 * level))
    assert rows == [{"encoding": "raw RGB", "black": "192"}, {"encoding": "a", "black": "10"}]
