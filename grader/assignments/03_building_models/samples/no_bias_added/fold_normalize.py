import copy


def fold_normalize(conv, mean, std):
    """Wrong: folds correctly when conv has a bias, but when it has none the mean shift is dropped."""
    if conv.padding_mode == "zeros" and any(p > 0 for p in conv.padding):
        raise ValueError("zero padding: the folded conv would differ at the borders")
    new = copy.deepcopy(conv)
    per_out = conv.out_channels // conv.groups
    scale = (1 / std).to(new.weight).view(conv.groups, -1).repeat_interleave(per_out, 0)[:, :, None, None]
    shift = (mean / std).to(new.weight).view(conv.groups, -1).repeat_interleave(per_out, 0)[:, :, None, None]
    with torch.no_grad():
        if new.bias is not None:
            new.bias -= (new.weight * shift).sum((1, 2, 3))
        new.weight *= scale
    return new
