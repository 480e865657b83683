def fold_normalize(conv, mean, std):
    """Wrong: refuses zero padding correctly, but builds the new layer without conv's padding_mode,
    so a reflect/replicate/circular conv becomes a zero-padded one (wrong at the borders)."""
    if conv.padding_mode == "zeros" and any(p > 0 for p in conv.padding):
        raise ValueError("zero padding: the folded conv would differ at the borders")
    w = conv.weight.detach()
    per_out = conv.out_channels // conv.groups
    s = std.to(w).view(conv.groups, -1).repeat_interleave(per_out, 0)[:, :, None, None]
    m = mean.to(w).view(conv.groups, -1).repeat_interleave(per_out, 0)[:, :, None, None]
    new = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                    conv.dilation, conv.groups, bias=True, dtype=w.dtype, device=w.device)
    with torch.no_grad():
        new.weight.copy_(w / s)
        bias = conv.bias if conv.bias is not None else torch.zeros(conv.out_channels, dtype=w.dtype, device=w.device)
        new.bias.copy_(bias - (w * m / s).sum((1, 2, 3)))
    return new
