import copy


def fold_normalize(conv, mean, std):
    """Correct, in another style: a deep copy of conv, the per-output-channel scale gathered by group
    index, the mean shift computed by running the scaled conv on a constant image."""
    if conv.padding_mode == "zeros" and max(conv.padding) > 0:
        raise ValueError("cannot fold Normalize into a conv with zero padding: its padded zeros would "
                         "stand for the pixel value `mean`, not 0, so the borders would change")
    new = copy.deepcopy(conv)
    w = conv.weight.detach()
    o, per_group = w.shape[0], w.shape[1]
    group_of = torch.arange(o, device=w.device) // (o // conv.groups)            # each output channel's group
    index = group_of[:, None] * per_group + torch.arange(per_group, device=w.device)[None, :]
    inv_std = (1 / std.to(w))[index]                                            # (o, in / groups)
    scaled = w * inv_std[:, :, None, None]
    shift = (scaled * mean.to(w)[index][:, :, None, None]).sum(dim=(1, 2, 3))
    old_bias = conv.bias.detach() if conv.bias is not None else torch.zeros(o, dtype=w.dtype, device=w.device)
    new.weight = nn.Parameter(scaled.clone())
    new.bias = nn.Parameter(old_bias - shift)
    return new
