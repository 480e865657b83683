def stable_softplus(x):
    """Correct: the max(x, 0) + log1p(exp(-|x|)) identity, written with tensor methods."""
    return x.clamp(min=0) + (-x.abs()).exp().log1p()
