def one_hot(labels, num_classes):
    """Right values, but a Python loop over the labels (and no range check)."""
    out = torch.zeros(len(labels), num_classes, dtype=torch.int64)
    for i, label in enumerate(labels.tolist()):
        out[i, label] = 1
    return out
