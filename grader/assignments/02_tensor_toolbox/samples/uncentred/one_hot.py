def one_hot(labels, num_classes):
    """Correct, in another style: validation with min/max, scatter into new_zeros."""
    if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= num_classes):
        raise ValueError(f"every label must be in 0..{num_classes - 1}")
    return labels.new_zeros((labels.numel(), num_classes)).scatter(1, labels.view(-1, 1), 1)
