def train_accumulated(model, batches, optimizer, loss_fn, accumulate):
    """Wrong: backpropagates each micro-batch's mean loss unscaled, so the gradient is the sum of
    the micro-batch means (about `accumulate` times too large). The logged losses are right."""
    losses, running, n, count = [], None, 0, 0
    optimizer.zero_grad()
    for x, y in batches:
        loss = loss_fn(model(x), y)
        loss.backward()
        weighted = loss.detach() * len(x)
        running = weighted if running is None else running + weighted
        n += len(x)
        count += 1
        if count == accumulate:
            optimizer.step()
            optimizer.zero_grad()
            losses.append((running / n).item())
            running, n, count = None, 0, 0
    if count:
        optimizer.step()
        losses.append((running / n).item())
    return losses
