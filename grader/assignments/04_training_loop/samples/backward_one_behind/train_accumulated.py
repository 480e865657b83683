def train_accumulated(model, batches, optimizer, loss_fn, accumulate):
    """Wrong on one point: pipelined one micro-batch behind. Each micro-batch's loss is computed
    before the previous one's backward(), so two graphs are alive during every forward pass. The
    gradients, steps, host reads and returned losses are right."""
    losses, pending, total, samples, count = [], None, None, 0, 0
    for inputs, targets in batches:
        if count == 0:
            optimizer.zero_grad()
        loss_sum = loss_fn(model(inputs), targets) * len(inputs)    # the mean times the size
        if pending is not None:
            pending.backward()                                      # the previous micro-batch, only now
        pending = loss_sum
        total = loss_sum.detach() if total is None else total + loss_sum.detach()
        samples, count = samples + len(inputs), count + 1
        if count == accumulate:
            losses.append(_finish(model, optimizer, pending, total, samples))
            pending, total, samples, count = None, None, 0, 0
    if count:
        losses.append(_finish(model, optimizer, pending, total, samples))
    return losses


def _finish(model, optimizer, pending, total, samples):
    pending.backward()
    for p in model.parameters():
        if p.grad is not None:
            p.grad.div_(samples)
    optimizer.step()
    return (total / samples).item()
