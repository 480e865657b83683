def amp_train_step(model, batch, optimizer, scaler, device_type="cuda", dtype=torch.float16):
    """Wrong (clause 5): unscales through the scaler but then checks the gradients and steps the optimizer
    by hand instead of calling scaler.step(optimizer)."""
    inputs, targets = batch
    optimizer.zero_grad()
    with torch.autocast(device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if all(bool(torch.isfinite(g).all()) for g in grads):
        optimizer.step()
    scaler.update()
    return loss.item()
