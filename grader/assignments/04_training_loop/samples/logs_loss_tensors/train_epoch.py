_seen = []          # "for debugging": every loss tensor of every batch, graphs included


def train_epoch(model, batches, optimizer, loss_fn):
    """Wrong on the exercise's point: returns floats, but keeps each loss tensor (and its graph) alive."""
    history = []
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        _seen.append(loss)
        history.append(loss.item())
    return history
