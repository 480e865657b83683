def pad_to_multiple(x, multiple=8, dim=-1):
    dim = dim % x.dim()
    missing = -x.shape[dim] % multiple
    return F.pad(x, [0, 0] * (x.dim() - 1 - dim) + [0, missing]) if missing else x


def pad_linear(linear, multiple=8):
    """Wrong (a new layer): when both sizes already are multiples it hands back the layer it was given, so
    training the "padded" layer trains the original too."""
    n_in, n_out = linear.in_features, linear.out_features
    new_in, new_out = n_in + -n_in % multiple, n_out + -n_out % multiple
    if (new_in, new_out) == (n_in, n_out):
        return linear
    padded = nn.Linear(new_in, new_out, bias=linear.bias is not None,
                       device=linear.weight.device, dtype=linear.weight.dtype)
    with torch.no_grad():
        padded.weight.copy_(F.pad(linear.weight, (0, new_in - n_in, 0, new_out - n_out)))
        if linear.bias is not None:
            padded.bias.copy_(F.pad(linear.bias, (0, new_out - n_out)))
    return padded
