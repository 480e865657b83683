def pairwise_sq_distances(a, b):
    """Correct, in another style: exact differences, 32 rows of a at a time (no m x n x d temporary)."""
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    chunks = [((a[..., i:i + 32, :].unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1)
              for i in range(0, a.shape[-2], 32)]
    if not chunks:
        return a.new_zeros(*batch, 0, b.shape[-2])
    return torch.cat(chunks, dim=-2)
