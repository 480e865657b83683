def one_hot(labels, num_classes):
    """Correct: range check, then scatter_ into zeros made on labels.device."""
    bad = (labels < 0) | (labels >= num_classes)
    if bad.any():
        raise ValueError(f"labels must lie in [0, {num_classes}); got {labels[bad][:5].tolist()}")
    out = torch.zeros(labels.shape[0], num_classes, dtype=torch.int64, device=labels.device)
    return out.scatter_(1, labels.unsqueeze(1), 1)
