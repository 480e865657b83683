def numpy_to_tensor_shared(arr):
    """Wrong: always copies, so nothing is shared."""
    return torch.tensor(arr)
