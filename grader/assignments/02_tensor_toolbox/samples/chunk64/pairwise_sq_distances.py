def pairwise_sq_distances(a, b):
    """Wrong on memory at small m: exact differences, 64 rows of a at a time. At m = 128 each chunk
    is half the whole m x n x d difference."""
    shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = a.expand(*shape, *a.shape[-2:]), b.expand(*shape, *b.shape[-2:])
    pieces = []
    for start in range(0, a.shape[-2], 64):
        diff = a[..., start:start + 64, None, :] - b[..., None, :, :]
        pieces.append((diff * diff).sum(-1))
    if not pieces:
        return a.new_zeros(*shape, 0, b.shape[-2])
    return torch.cat(pieces, dim=-2)
