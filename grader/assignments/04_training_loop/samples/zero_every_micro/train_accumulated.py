def train_accumulated(model, batches, optimizer, loss_fn, accumulate):
    """Wrong: resets the gradients before every micro-batch, so each step only sees the last
    micro-batch's (scaled) gradient. The losses are logged correctly."""
    losses, group = [], []

    def step(group):
        n = sum(len(x) for x, _ in group)
        running = None
        for x, y in group:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y) * (len(x) / n)
            loss.backward()
            running = loss.detach() if running is None else running + loss.detach()
        optimizer.step()
        losses.append(running.item())

    for batch in batches:
        group.append(batch)
        if len(group) == accumulate:
            step(group)
            group = []
    if group:
        step(group)
    return losses
