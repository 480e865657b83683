def amp_train_step(model, batch, optimizer, scaler, max_norm, device_type="cuda", dtype=torch.float16):
    """Wrong (clause 5): clips after scaler.step(optimizer), which has unscaled the gradients and already
    stepped with them unclipped; the clipping changes only what is left in .grad. The norm returned is the
    true one, and .grad ends up holding the true, clipped gradients."""
    inputs, targets = batch
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    return loss.item(), norm.item()
