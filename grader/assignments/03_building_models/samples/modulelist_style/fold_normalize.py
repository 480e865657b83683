import copy


def fold_normalize(conv, mean, std):
    """Correct, in another style: a deep copy, a loop over the groups for the weight, and the bias
    read off the original layer applied to a constant image of -mean / std (one output pixel)."""
    if conv.padding_mode == "zeros" and max(conv.padding) > 0:
        raise ValueError("with zero padding the folded layer would differ from the original at the borders")
    folded = copy.deepcopy(conv)
    w = folded.weight
    mean, std = mean.to(w), std.to(w)
    size = [conv.dilation[i] * (conv.kernel_size[i] - 1) + 1 for i in range(2)]
    constant = (-mean / std).view(1, -1, 1, 1).expand(1, conv.in_channels, *size)
    with torch.no_grad():
        shift = F.conv2d(constant, conv.weight, conv.bias, dilation=conv.dilation, groups=conv.groups).flatten()
        per_in, per_out = conv.in_channels // conv.groups, conv.out_channels // conv.groups
        for g in range(conv.groups):
            w[g * per_out:(g + 1) * per_out] /= std[g * per_in:(g + 1) * per_in].view(1, -1, 1, 1)
    folded.bias = nn.Parameter(shift)
    return folded
