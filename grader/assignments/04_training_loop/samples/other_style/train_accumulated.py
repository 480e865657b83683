def train_accumulated(model, batches, optimizer, loss_fn, accumulate):
    """Correct, in another style: no look-ahead. Each micro-batch backpropagates its summed loss
    (mean * size); the gradients are divided by the group's sample count just before the step.
    Gradients are set to None by hand, and float() reads the running sum once per step. Each
    micro-batch moves to the model's device, named by a string: a move, not a host read."""
    params = [p for p in model.parameters()]
    device = params[0].device.type
    history = []
    total, samples, count = None, 0, 0
    for inputs, targets in batches:
        inputs, targets = inputs.to(device), targets.to(device)
        if count == 0:
            for p in params:
                p.grad = None
        loss_sum = loss_fn(model(inputs), targets) * inputs.shape[0]
        loss_sum.backward()
        total = loss_sum.detach() if total is None else total.add(loss_sum.detach())
        samples += inputs.shape[0]
        count += 1
        if count == accumulate:
            history.append(_finish(params, optimizer, total, samples))
            total, samples, count = None, 0, 0
    if count:
        history.append(_finish(params, optimizer, total, samples))
    return history


def _finish(params, optimizer, total, samples):
    for p in params:
        if p.grad is not None:
            p.grad.div_(samples)
    optimizer.step()
    return float(total / samples)
