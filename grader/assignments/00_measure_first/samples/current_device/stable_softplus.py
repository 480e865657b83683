def stable_softplus(x):
    """Correct: one formula per sign; torch.where keeps the branch that does not overflow."""
    return torch.where(x > 0, x + torch.log1p(torch.exp(-x)), torch.log1p(torch.exp(x)))
