def train_epoch(model, batches, optimizer, loss_fn):
    """Wrong (one clause): logs each loss rounded to 4 decimals. The steps, the weights and the
    kept graphs are right, and the values pass a comparison to 1e-4; they are not the losses."""
    losses = []
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(round(loss.item(), 4))
    return losses
