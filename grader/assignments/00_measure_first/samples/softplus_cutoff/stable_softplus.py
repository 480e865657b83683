def stable_softplus(x):
    """Wrong in float64: above a cut-off of 15 it returns x itself, as F.softplus does above its threshold;
    log1p(exp(-x)) is still 2e-8 of x there, more than the 1e-9 allowed (float32 is fine)."""
    return torch.where(x > 15, x, torch.log1p(torch.exp(torch.clamp(x, max=15))))
