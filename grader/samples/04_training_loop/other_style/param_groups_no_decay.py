def param_groups_no_decay(model, weight_decay):
    """Correct, in another style: named_parameters (which skips duplicates) and a dims test."""
    groups = [{"params": [], "weight_decay": weight_decay}, {"params": [], "weight_decay": 0.0}]
    for _, p in model.named_parameters():
        if p.requires_grad:
            groups[0 if p.dim() > 1 else 1]["params"].append(p)
    return groups
