def pairwise_sq_distances(a, b):
    """Wrong far from the origin: the batched matmul identity, clamped, but not centred."""
    sq = (a * a).sum(-1).unsqueeze(-1) + (b * b).sum(-1).unsqueeze(-2) - 2 * torch.matmul(a, b.transpose(-1, -2))
    return torch.clamp(sq, min=0)
