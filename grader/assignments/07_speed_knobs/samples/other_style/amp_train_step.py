def amp_train_step(model, batch, optimizer, scaler, max_norm, device_type="cuda", dtype=torch.float16):
    """Correct, in another style: gradients set to None by hand, torch.amp.autocast, clip_grad_norm_ on a
    list of the parameters, the norm returned through float(); scaler.step does not unscale twice."""
    x, y = batch
    params = list(model.parameters())
    for p in params:
        p.grad = None
    with torch.amp.autocast(device_type, dtype=dtype):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.unscale_(optimizer)      # the true gradients, before clipping them
    total_norm = nn.utils.clip_grad_norm_(params, max_norm)
    scaler.step(optimizer)
    scaler.update()
    return float(loss.detach()), float(total_norm)
