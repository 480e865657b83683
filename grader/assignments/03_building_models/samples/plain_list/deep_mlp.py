class DeepMLP(nn.Module):
    """Wrong: the hidden layers live in a plain Python list, so nn.Module never registers them."""

    def __init__(self, in_features, hidden_features, out_features, num_hidden_layers):
        super().__init__()
        self.first = nn.Linear(in_features, hidden_features)
        self.hidden = [nn.Linear(hidden_features, hidden_features) for _ in range(num_hidden_layers)]
        self.last = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        x = torch.relu(self.first(x))
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.last(x)
