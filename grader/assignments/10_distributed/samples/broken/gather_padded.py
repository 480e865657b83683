def gather_padded(tensor, group=None):
    raise NotImplementedError("todo")
