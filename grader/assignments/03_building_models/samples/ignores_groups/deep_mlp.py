class DeepMLP(nn.Module):
    """Correct, in another style: every Linear in one ModuleList, no ReLU after the last one."""

    def __init__(self, in_features, hidden_features, out_features, num_hidden_layers):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(in_features, hidden_features)])
        self.layers.extend(nn.Linear(hidden_features, hidden_features) for _ in range(num_hidden_layers))
        self.layers.append(nn.Linear(hidden_features, out_features))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x
