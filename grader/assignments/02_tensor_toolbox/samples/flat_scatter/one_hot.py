def one_hot(labels, num_classes):
    if labels.numel() and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must lie in [0, {num_classes})")
    n = labels.shape[0]
    flat = torch.zeros(n * num_classes, dtype=torch.int64, device=labels.device)
    flat.scatter_(0, torch.arange(n, device=labels.device) * num_classes + labels, 1)
    return flat.view(n, num_classes)
