def one_hot(labels, num_classes):
    """Wrong on a GPU: the result is built with device="cpu" (labels on a GPU would meet a CPU tensor)."""
    if ((labels < 0) | (labels >= num_classes)).any():
        raise ValueError(f"labels must lie in [0, {num_classes})")
    out = torch.zeros((labels.numel(), num_classes), dtype=torch.int64, device="cpu")
    return out.scatter_(1, labels.view(-1, 1), 1)
