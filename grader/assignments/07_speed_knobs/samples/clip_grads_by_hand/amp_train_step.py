def amp_train_step(model, batch, optimizer, scaler, max_norm, device_type="cuda", dtype=torch.float16):
    """Correct, in another style: no clip_grad_norm_; after unscaling, the total norm is computed and the
    gradients scaled down by hand (in place, under no_grad), the step and the update through the scaler."""
    inputs, targets = batch
    for p in model.parameters():
        p.grad = None
    with torch.autocast(device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    total = torch.sqrt(sum(g.pow(2).sum() for g in grads))
    with torch.no_grad():
        factor = torch.clamp(max_norm / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(factor)
    scaler.step(optimizer)
    scaler.update()
    return loss.item(), total.item()
