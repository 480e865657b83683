def numpy_to_tensor_shared(arr):
    """Wrong (zero strides): copies unless every stride is positive, so arr[:, None] or a broadcast
    row (a stride of 0, not negative) comes back as a copy instead of sharing memory."""
    if all(stride > 0 for stride in arr.strides):
        return torch.from_numpy(arr)
    return torch.from_numpy(arr.copy())
