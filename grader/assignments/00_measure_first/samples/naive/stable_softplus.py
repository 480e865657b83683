def stable_softplus(x):
    """Wrong: the textbook formula overflows for large x and loses tiny values."""
    return torch.log(1 + torch.exp(x))
