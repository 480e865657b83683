def amp_train_step(model, batch, optimizer, scaler, max_norm, device_type="cuda", dtype=torch.float16):
    """Wrong (clause 6): unscales and clips right, but then checks the norm for inf/NaN and steps the
    optimizer by hand instead of calling scaler.step(optimizer)."""
    inputs, targets = batch
    optimizer.zero_grad()
    with torch.autocast(device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if torch.isfinite(norm):
        optimizer.step()
    scaler.update()
    return loss.item(), norm.item()
