def stable_softplus(x):
    """Wrong on a GPU: it checks its input (which reads values), then makes the zeros for max(x, 0) with
    device="cpu", not on x.device."""
    if not torch.isfinite(x).all():
        raise ValueError("stable_softplus needs finite input")
    zeros = torch.zeros(x.shape, dtype=x.dtype, device="cpu")
    return torch.maximum(x, zeros) + torch.log1p(torch.exp(-x.abs()))
