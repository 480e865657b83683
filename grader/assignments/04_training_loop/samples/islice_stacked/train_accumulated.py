from itertools import islice


def train_accumulated(model, batches, optimizer, loss_fn, accumulate):
    """Correct, in another style: each group taken with itertools.islice, every micro-batch's loss
    weighted with mul(), the weighted detached losses summed with torch.stack once per group."""
    it, history = iter(batches), []
    while group := list(islice(it, accumulate)):
        total = sum(x.shape[0] for x, _ in group)
        optimizer.zero_grad()
        parts = []
        for x, y in group:
            weighted = loss_fn(model(x), y).mul(x.shape[0] / total)
            weighted.backward()
            parts.append(weighted.detach())
        optimizer.step()
        history.append(torch.stack(parts).sum().item())
    return history
