def param_groups_no_decay(model, weight_decay):
    """Wrong on the edge cases: frozen parameters included, tied weights twice."""
    decay, no_decay = [], []
    for module in model.modules():
        for p in module.parameters(recurse=False):
            (decay if p.ndim >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
