def numpy_to_tensor_shared(arr):
    """Correct, in another style: torch.as_tensor (no copy for a CPU array), np.ascontiguousarray for a
    negative stride, min() with a default for 0-d arrays."""
    if min(arr.strides, default=0) < 0:
        arr = np.ascontiguousarray(arr)
    return torch.as_tensor(arr)
