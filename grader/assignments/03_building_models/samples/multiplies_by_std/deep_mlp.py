class DeepMLP(nn.Sequential):
    """Correct, in another style: the model IS an nn.Sequential (its forward is inherited)."""

    def __init__(self, in_features, hidden_features, out_features, num_hidden_layers):
        dims = [in_features] + [hidden_features] * (num_hidden_layers + 1)
        blocks = [m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.ReLU())]
        super().__init__(*blocks, nn.Linear(hidden_features, out_features))
