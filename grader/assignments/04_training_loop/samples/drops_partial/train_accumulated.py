def train_accumulated(model, batches, optimizer, loss_fn, accumulate):
    """Wrong on one point: a shorter last group is backpropagated but never stepped (its gradients
    would leak into whatever runs next). Full groups are right."""
    losses, group = [], []
    for batch in batches:
        group.append(batch)
        if len(group) < accumulate:
            continue
        n = sum(len(x) for x, _ in group)
        optimizer.zero_grad()
        running = 0
        for x, y in group:
            loss = loss_fn(model(x), y) * (len(x) / n)
            loss.backward()
            running = running + loss.detach()
        optimizer.step()
        losses.append(running.item())
        group = []
    for x, y in group:                     # the last, shorter group: backward only
        loss_fn(model(x), y).backward()
    return losses
