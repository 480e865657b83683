import copy


def fold_input_scale(conv, scale):
    """Correct, in another style: deep-copy the layer, then scale its weight in place."""
    folded = copy.deepcopy(conv)
    with torch.no_grad():
        folded.weight.mul_(scale)
    return folded
