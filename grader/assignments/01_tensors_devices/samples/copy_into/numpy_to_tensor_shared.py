def numpy_to_tensor_shared(arr):
    """Correct, in another style: NumPy compares the strides (an empty tuple for a 0-d array gives no
    negative one) and the copy, when needed, is made by NumPy in C order."""
    negative = np.any(np.asarray(arr.strides) < 0)
    return torch.from_numpy(np.array(arr, order="C") if negative else arr)
