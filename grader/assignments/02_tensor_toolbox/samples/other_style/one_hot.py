def one_hot(labels, num_classes):
    """Correct, in another style: out-of-place scatter with a src tensor."""
    if labels.numel() and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must be in [0, {num_classes})")
    zeros = labels.new_zeros((labels.shape[0], num_classes))
    return zeros.scatter(1, labels.view(-1, 1), torch.ones_like(labels).view(-1, 1))
