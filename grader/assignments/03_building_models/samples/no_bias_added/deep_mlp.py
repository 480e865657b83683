from collections import OrderedDict


class DeepMLP(nn.Module):
    """Correct, in another style: a named nn.Sequential built from an OrderedDict."""

    def __init__(self, in_features, hidden_features, out_features, num_hidden_layers):
        super().__init__()
        layers = [("input", nn.Linear(in_features, hidden_features)), ("relu_in", nn.ReLU())]
        for i in range(num_hidden_layers):
            layers += [(f"hidden{i}", nn.Linear(hidden_features, hidden_features)), (f"relu{i}", nn.ReLU())]
        layers.append(("output", nn.Linear(hidden_features, out_features)))
        self.net = nn.Sequential(OrderedDict(layers))

    def forward(self, x):
        return self.net(x)
