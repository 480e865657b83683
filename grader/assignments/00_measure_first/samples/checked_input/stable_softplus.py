def stable_softplus(x):
    """Correct, in another style: it checks its input first (reading values, which a GPU allows), then
    uses one torch.where for the sign, with the zero made by x.new_zeros (x's device and dtype)."""
    if not x.is_floating_point():
        raise TypeError("stable_softplus needs a floating-point tensor")
    if x.numel() and not bool(torch.isfinite(x).all()):
        raise ValueError(f"stable_softplus: x has inf or nan (largest |x| {float(x.abs().max()):g})")
    positive = x > 0
    tail = torch.log1p(torch.exp(torch.where(positive, -x, x)))  # exp of -|x|: never overflows
    return torch.where(positive, x, x.new_zeros(())) + tail
