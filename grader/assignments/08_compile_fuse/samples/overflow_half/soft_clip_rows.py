def soft_clip_rows(x, limit):
    """Wrong (intermediates within the dtype): x * limit is computed before the division, which overflows
    float16 for large rows, so they come back as inf (values 0, one graph 3)."""
    peak = x.abs().amax(dim=-1, keepdim=True)
    return torch.where(peak > limit, x * limit / peak, x)
