def pad_to_multiple(x, multiple=8, dim=-1):
    """Wrong (gradients): the values are copied in under torch.no_grad(), so the result is cut off from x
    and no gradient flows back through the padding."""
    dim = dim % x.dim()
    size = x.shape[dim]
    shape = list(x.shape)
    shape[dim] = size + -size % multiple
    if shape[dim] == size:
        return x
    with torch.no_grad():
        out = x.new_zeros(shape)
        out.narrow(dim, 0, size).copy_(x)
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
