def amp_train_step(model, batch, optimizer, scaler, device_type="cuda", dtype=torch.float16):
    """Wrong (clause 6): returns the scaled loss divided by the scale read after update(), which has already
    changed it (grown after a clean step, cut after an overflow), so the loss comes back halved or doubled
    whenever the scale moves."""
    inputs, targets = batch
    optimizer.zero_grad()
    with torch.autocast(device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    return scaled.item() / scaler.get_scale()
