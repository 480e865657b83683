def fold_normalize(conv, mean, std):
    """Wrong: treats the weight's second index as the input channel, so every group uses the
    statistics of the first group's channels (right only for groups=1)."""
    if conv.padding_mode == "zeros" and any(p > 0 for p in conv.padding):
        raise ValueError("zero padding: the folded conv would differ at the borders")
    w = conv.weight.detach()
    n = w.shape[1]                                   # in_channels / groups, not in_channels
    s = std.to(w)[:n].view(1, n, 1, 1)
    m = mean.to(w)[:n].view(1, n, 1, 1)
    new = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, conv.dilation,
                    conv.groups, bias=True, padding_mode=conv.padding_mode, dtype=w.dtype, device=w.device)
    with torch.no_grad():
        new.weight.copy_(w / s)
        bias = conv.bias if conv.bias is not None else 0
        new.bias.copy_(bias - (w * m / s).sum((1, 2, 3)))
    return new
