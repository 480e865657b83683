class DeepMLP(nn.Module):
    """Correct, in another style: layers added one by one with add_module; forward walks children()."""

    def __init__(self, in_features, hidden_features, out_features, num_hidden_layers):
        super().__init__()
        sizes = [in_features] + [hidden_features] * (num_hidden_layers + 1) + [out_features]
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            self.add_module(f"fc{i}", nn.Linear(a, b))

    def forward(self, x):
        *hidden, last = self.children()
        for layer in hidden:
            x = F.relu(layer(x))
        return last(x)
