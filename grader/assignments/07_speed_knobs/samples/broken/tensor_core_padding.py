def pad_to_multiple(x, multiple=8, dim=-1):
    raise NotImplementedError("todo")


def pad_linear(linear, multiple=8):
    raise NotImplementedError("todo")
