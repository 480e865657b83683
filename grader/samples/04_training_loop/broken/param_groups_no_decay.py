def param_groups_no_decay(model, weight_decay):
    raise NotImplementedError
