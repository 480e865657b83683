def pairwise_sq_distances(a, b):
    """Exact and batched, but the whole (..., m, n, d) difference is materialised."""
    return ((a.unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1)
