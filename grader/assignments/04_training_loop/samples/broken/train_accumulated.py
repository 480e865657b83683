def train_accumulated(model, batches, optimizer, loss_fn, accumulate):
    losses = []
    for i, (x, y) in enumerate(batches):
        loss = loss_fn(model(x), y) / acumulate
        loss.backward()
        if (i + 1) % accumulate == 0:
            optimizer.step()
            losses.append(loss.item())
    return losses
