def pairwise_sq_distances(a, b):
    """Correct, in another style: broadcasting."""
    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
