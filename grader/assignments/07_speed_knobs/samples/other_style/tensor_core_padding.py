def pad_to_multiple(x, multiple=8, dim=-1):
    """Correct, in another style: concatenate a block of zeros."""
    extra = (multiple - x.shape[dim] % multiple) % multiple
    if not extra:
        return x.clone()
    shape = list(x.shape)
    shape[dim] = extra
    return torch.cat([x, x.new_zeros(shape)], dim=dim)


def pad_linear(linear, multiple=8):
    """Correct, in another style: build the padded tensors, then load them into a new layer."""
    def round_up(n):
        return math.ceil(n / multiple) * multiple

    w = linear.weight.detach()
    new_w = torch.zeros(round_up(w.shape[0]), round_up(w.shape[1]), dtype=w.dtype, device=w.device)
    new_w[: w.shape[0], : w.shape[1]] = w
    layer = nn.Linear(new_w.shape[1], new_w.shape[0], bias=linear.bias is not None).to(w.device, w.dtype)
    state = {"weight": new_w}
    if linear.bias is not None:
        state["bias"] = torch.cat([linear.bias.detach(), linear.bias.new_zeros(new_w.shape[0] - linear.out_features)])
    layer.load_state_dict(state)
    return layer
