class DeepMLP(nn.Module):
    def __init__(self, in_features, hidden_features, out_features, num_hidden_layers)
        super().__init__()
