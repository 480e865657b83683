def train_accumulated(model, batches, optimizer, loss_fn, accumulate):
    """Wrong: the running loss adds the loss itself, not loss.detach(), so it holds the graph of
    every micro-batch of the group until the step. Everything else is right."""
    losses, group = [], []

    def step(group):
        n = sum(len(x) for x, _ in group)
        optimizer.zero_grad()
        running = 0.0
        for x, y in group:
            loss = loss_fn(model(x), y) * (len(x) / n)
            loss.backward()
            running = running + loss
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
