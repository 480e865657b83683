def fold_normalize(conv, mean, std):
    """Wrong: the weight is right, but the mean shift is taken per OUTPUT channel (mean[o] / std[o]
    times the sum of row o of the weight) instead of per input channel."""
    if conv.padding_mode == "zeros" and any(p > 0 for p in conv.padding):
        raise ValueError("zero padding: the folded conv would differ at the borders")
    groups, per_out = conv.groups, conv.out_channels // conv.groups
    w = conv.weight.detach()
    new = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                    conv.dilation, groups, bias=True, padding_mode=conv.padding_mode, dtype=w.dtype)
    with torch.no_grad():
        new.weight.copy_(w / std.to(w).view(groups, -1).repeat_interleave(per_out, 0)[:, :, None, None])
        bias = conv.bias if conv.bias is not None else torch.zeros(conv.out_channels, dtype=w.dtype)
        new.bias.copy_(bias - w.sum((1, 2, 3)) * (mean / std).to(w))
    return new
