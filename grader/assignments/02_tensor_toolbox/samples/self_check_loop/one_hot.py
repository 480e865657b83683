def one_hot(labels, num_classes):
    if ((labels < 0) | (labels >= num_classes)).any():
        raise ValueError("label out of range")
    out = torch.zeros(len(labels), num_classes, dtype=torch.int64, device=labels.device)
    return out.scatter_(1, labels.unsqueeze(1), 1)


# my own quick self-check against the built-in (outside the function)
for _c in (3, 5, 10):
    _l = torch.randint(0, _c, (20,))
    assert torch.equal(one_hot(_l, _c), F.one_hot(_l, _c))
