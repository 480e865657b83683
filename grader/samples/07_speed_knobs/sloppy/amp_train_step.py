def amp_train_step(model, batch, optimizer, scaler, device_type="cuda", dtype=torch.float16):
    """Wrong: no zero_grad (old gradients leak in), and optimizer.step() is called directly after unscale_,
    so a step with inf gradients is not skipped."""
    inputs, targets = batch
    with torch.autocast(device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    optimizer.step()
    scaler.update()
    return loss.item()
