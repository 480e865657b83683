def numpy_to_tensor_shared(arr):
    """Correct, in another style: try from_numpy, copy only when it refuses."""
    try:
        return torch.from_numpy(arr)
    except ValueError:
        return torch.from_numpy(arr.copy())
