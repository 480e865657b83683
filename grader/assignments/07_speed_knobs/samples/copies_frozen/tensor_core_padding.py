def pad_to_multiple(x, multiple=8, dim=-1):
    dim = dim % x.dim()
    missing = -x.shape[dim] % multiple
    if missing == 0:
        return x
    return F.pad(x, [0, 0] * (x.dim() - 1 - dim) + [0, missing])


def pad_linear(linear, multiple=8):
    """Wrong (both are nn.Parameters that require grad): requires_grad is copied from the original, so a
    frozen layer gives a frozen padded layer."""
    n_in, n_out = linear.in_features, linear.out_features
    m_in, m_out = n_in + -n_in % multiple, n_out + -n_out % multiple
    padded = nn.Linear(m_in, m_out, bias=linear.bias is not None,
                       device=linear.weight.device, dtype=linear.weight.dtype)
    w = F.pad(linear.weight.detach(), (0, m_in - n_in, 0, m_out - n_out))
    padded.weight = nn.Parameter(w, requires_grad=linear.weight.requires_grad)
    if linear.bias is not None:
        b = F.pad(linear.bias.detach(), (0, m_out - n_out))
        padded.bias = nn.Parameter(b, requires_grad=linear.bias.requires_grad)
    return padded
