def pairwise_sq_distances(a, b):
    """Right values, wrong tool: cdist."""
    return torch.cdist(a, b) ** 2
