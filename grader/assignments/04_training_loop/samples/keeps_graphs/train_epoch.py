def train_epoch(model, batches, optimizer, loss_fn):
    """Wrong: keeps the loss tensors (and their graphs) instead of floats."""
    losses = []
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return losses
