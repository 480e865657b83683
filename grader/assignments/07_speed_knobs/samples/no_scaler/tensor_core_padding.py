def pad_to_multiple(x, multiple=8, dim=-1):
    dim = dim % x.dim()
    missing = -x.shape[dim] % multiple
    return F.pad(x, [0, 0] * (x.dim() - 1 - dim) + [0, missing]) if missing else x


def pad_linear(linear, multiple=8):
    n_in, n_out = linear.in_features, linear.out_features
    padded = nn.Linear(n_in + -n_in % multiple, n_out + -n_out % multiple, bias=linear.bias is not None,
                       dtype=linear.weight.dtype)
    with torch.no_grad():
        padded.weight.zero_()[:n_out, :n_in] = linear.weight
        if linear.bias is not None:
            padded.bias.zero_()[:n_out] = linear.bias
    return padded
