def pairwise_sq_distances(a, b):
    """Correct, in another style: each batch shifted to its first point of b (or of a), then exact
    differences against 16 rows of b at a time, joined along the last dimension with einsum."""
    shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = a.expand(*shape, *a.shape[-2:])
    b = b.expand(*shape, *b.shape[-2:])
    if a.shape[-2] == 0 or b.shape[-2] == 0:
        return torch.zeros(*shape, a.shape[-2], b.shape[-2], dtype=a.dtype, device=a.device)
    anchor = a[..., :1, :]
    a, b = a - anchor, b - anchor
    blocks = []
    for j in range(0, b.shape[-2], 16):
        d = a.unsqueeze(-2) - b[..., j:j + 16, :].unsqueeze(-3)      # (..., m, 16, d)
        blocks.append(torch.einsum("...ijk,...ijk->...ij", d, d))
    return torch.cat(blocks, dim=-1)
