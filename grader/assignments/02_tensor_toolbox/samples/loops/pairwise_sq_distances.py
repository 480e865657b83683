def pairwise_sq_distances(a, b):
    """Wrong: the matmul identity without clamping can go negative."""
    return a.pow(2).sum(1, keepdim=True) + b.pow(2).sum(1) - 2 * a @ b.T
