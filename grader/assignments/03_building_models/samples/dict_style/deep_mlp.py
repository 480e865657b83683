class DeepMLP(nn.Module):
    """Correct, in another style: layers added one by one with add_module under their own names,
    forward walks children() and skips the ReLU after the last one."""

    def __init__(self, in_features, hidden_features, out_features, num_hidden_layers):
        super().__init__()
        widths = [in_features, *[hidden_features] * (num_hidden_layers + 1), out_features]
        for k, (n_in, n_out) in enumerate(zip(widths, widths[1:])):
            self.add_module(f"fc{k}", nn.Linear(n_in, n_out))

    def forward(self, x):
        layers = list(self.children())
        for layer in layers[:-1]:
            x = nn.functional.relu(layer(x))
        return layers[-1](x)
