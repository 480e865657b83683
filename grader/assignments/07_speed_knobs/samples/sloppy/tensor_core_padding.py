def pad_to_multiple(x, multiple=8, dim=-1):
    """Wrong: always adds padding, even when the size already is a multiple."""
    size = x.shape[dim]
    target = (size // multiple + 1) * multiple
    shape = list(x.shape)
    shape[dim] = target - size
    return torch.cat([x, torch.zeros(shape, dtype=x.dtype, device=x.device)], dim=dim)


def pad_linear(linear, multiple=8):
    n_in, n_out = linear.in_features, linear.out_features
    new_in, new_out = -(-n_in // multiple) * multiple, -(-n_out // multiple) * multiple
    padded = nn.Linear(new_in, new_out, bias=linear.bias is not None, dtype=linear.weight.dtype)
    with torch.no_grad():
        padded.weight.copy_(F.pad(linear.weight, (0, new_in - n_in, 0, new_out - n_out)))
        if linear.bias is not None:
            padded.bias.copy_(F.pad(linear.bias, (0, new_out - n_out)))
    return padded
