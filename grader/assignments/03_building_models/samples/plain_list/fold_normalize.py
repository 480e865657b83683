def fold_normalize(conv, mean, std):
    """Wrong: folds the division by std (as the T047 demo folds /255) but forgets the mean shift."""
    new = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                    conv.dilation, conv.groups, bias=True, padding_mode=conv.padding_mode)
    with torch.no_grad():
        new.weight.copy_(conv.weight / std.view(conv.groups, -1).repeat_interleave(
            conv.out_channels // conv.groups, 0)[:, :, None, None])
        new.bias.copy_(conv.bias if conv.bias is not None else torch.zeros(conv.out_channels))
    return new
