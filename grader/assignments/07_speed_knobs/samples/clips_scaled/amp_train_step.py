def amp_train_step(model, batch, optimizer, scaler, max_norm, device_type="cuda", dtype=torch.float16):
    """Wrong (clause 5): clips the gradients as backward() left them, still multiplied by the scale, so their
    norm is the scale times the true one and the clipping cuts them far harder than max_norm asks;
    scaler.step then unscales the clipped gradients. The norm returned is the scaled gradients' too."""
    inputs, targets = batch
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item(), norm.item()
