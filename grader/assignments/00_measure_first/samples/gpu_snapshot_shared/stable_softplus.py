def stable_softplus(x):
    """Correct, in another style: logaddexp with 0."""
    return torch.logaddexp(x, torch.zeros_like(x))
