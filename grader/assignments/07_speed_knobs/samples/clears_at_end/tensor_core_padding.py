def pad_to_multiple(x, multiple=8, dim=-1):
    """Wrong (device): the zeros are made on the default device, not on x's (on a GPU the result would
    land on the CPU, or the copy would fail)."""
    dim = dim % x.dim()
    shape = list(x.shape)
    shape[dim] = -(-shape[dim] // multiple) * multiple
    out = torch.zeros(shape, dtype=x.dtype)
    out[tuple(slice(0, n) for n in x.shape)] = x
    return out


def pad_linear(linear, multiple=8):
    n_in, n_out = linear.in_features, linear.out_features
    padded = nn.Linear(n_in + -n_in % multiple, n_out + -n_out % multiple, bias=linear.bias is not None,
                       device=linear.weight.device, dtype=linear.weight.dtype)
    with torch.no_grad():
        padded.weight.zero_()[:n_out, :n_in] = linear.weight
        if linear.bias is not None:
            padded.bias.zero_()[:n_out] = linear.bias
    return padded
