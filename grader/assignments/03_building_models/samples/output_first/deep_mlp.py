class DeepMLP(nn.Module):
    """Wrong: the output layer is created (and registered) first, although forward applies it last."""
    def __init__(self, in_features, hidden_features, out_features, num_hidden_layers):
        super().__init__()
        self.head = nn.Linear(hidden_features, out_features)
        self.stem = nn.Linear(in_features, hidden_features)
        self.hidden = nn.ModuleList(nn.Linear(hidden_features, hidden_features) for _ in range(num_hidden_layers))

    def forward(self, x):
        x = torch.relu(self.stem(x))
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.head(x)
