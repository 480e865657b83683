def amp_train_step(model, batch, optimizer, scaler, device_type="cuda", dtype=torch.float16):
    """Correct, in another style: gradients set to None by hand, torch.amp.autocast, an explicit unscale_."""
    x, y = batch
    for p in model.parameters():
        p.grad = None
    with torch.amp.autocast(device_type, dtype=dtype):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.unscale_(optimizer)      # e.g. to clip gradients here; step() does not unscale twice
    scaler.step(optimizer)
    scaler.update()
    return float(loss.detach())
