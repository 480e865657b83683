def amp_train_step(model, batch, optimizer, scaler, max_norm, device_type="cpu", dtype=torch.bfloat16):
    """Wrong on one point: the defaults are device_type="cpu", dtype=torch.bfloat16, not "cuda" and
    torch.float16, so a caller on a GPU who leaves them out gets no autocast there. Right whenever both
    are passed."""
    inputs, targets = batch
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item(), norm.item()
