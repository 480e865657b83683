def pad_to_multiple(x, multiple=8, dim=-1):
    """Correct, in another style: move the dimension last, pad it, move it back."""
    d = dim if dim >= 0 else x.dim() + dim
    size = x.size(d)
    target = (size + multiple - 1) // multiple * multiple
    moved = x.movedim(d, -1)
    return F.pad(moved, (0, target - size)).movedim(-1, d)


def pad_linear(linear, multiple=8):
    """Correct, in another style: a deep copy whose parameters are replaced by padded ones."""
    def up(n):
        return math.ceil(n / multiple) * multiple

    out_f, in_f = linear.weight.shape
    new = copy.deepcopy(linear)
    new.in_features, new.out_features = up(in_f), up(out_f)
    new.weight = nn.Parameter(F.pad(linear.weight.detach(), (0, up(in_f) - in_f, 0, up(out_f) - out_f)))
    if linear.bias is not None:
        new.bias = nn.Parameter(F.pad(linear.bias.detach(), (0, up(out_f) - out_f)))
    return new
