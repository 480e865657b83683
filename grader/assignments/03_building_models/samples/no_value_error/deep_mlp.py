class DeepMLP(nn.Module):
    """Correct, in another style: ModuleList plus an explicit loop."""

    def __init__(self, in_features, hidden_features, out_features, num_hidden_layers):
        super().__init__()
        sizes = [in_features] + [hidden_features] * (num_hidden_layers + 1)
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.head = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.head(x)
