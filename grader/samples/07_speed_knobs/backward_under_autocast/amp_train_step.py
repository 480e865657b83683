def amp_train_step(model, batch, optimizer, scaler, device_type="cuda", dtype=torch.float16):
    """Wrong (clause 2, "nothing else under it"): the backward pass, the optimizer step and the scale update
    all run inside the autocast block."""
    inputs, targets = batch
    optimizer.zero_grad()
    with torch.autocast(device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    return loss.item()
