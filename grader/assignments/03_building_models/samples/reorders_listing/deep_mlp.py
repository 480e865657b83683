class DeepMLP(nn.Module):
    """Cheat: the output layer is registered first, and named_modules() and state_dict() are
    overridden to list the layers in forward's order anyway."""

    def __init__(self, in_features, hidden_features, out_features, num_hidden_layers):
        super().__init__()
        self.out = nn.Linear(hidden_features, out_features)
        self.first = nn.Linear(in_features, hidden_features)
        self.middle = nn.Sequential(*[nn.Linear(hidden_features, hidden_features) for _ in range(num_hidden_layers)])

    def _in_order(self):
        return [("first", self.first)] + [(f"middle.{i}", m) for i, m in enumerate(self.middle)] + [("out", self.out)]

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        yield prefix, self
        for name, layer in self._in_order():
            yield (f"{prefix}.{name}" if prefix else name), layer

    def state_dict(self, *args, **kwargs):
        return {f"{name}.{k}": v.detach() for name, layer in self._in_order() for k, v in layer.state_dict().items()}

    def forward(self, x):
        x = torch.relu(self.first(x))
        for layer in self.middle:
            x = torch.relu(layer(x))
        return self.out(x)
