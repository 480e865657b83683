def amp_train_step(model, batch, optimizer, scaler, max_norm, device_type="cuda", dtype=torch.float16):
    """Wrong (clause 7, the loss): returns the scaled loss divided by the scale read after update(), which
    has already changed it (grown after a clean step, cut after an overflow), so the loss comes back halved
    or doubled whenever the scale moves. The clipping and the norm are right."""
    inputs, targets = batch
    optimizer.zero_grad()
    with torch.autocast(device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return scaled.item() / scaler.get_scale(), norm.item()
