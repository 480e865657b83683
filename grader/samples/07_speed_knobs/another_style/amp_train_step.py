def amp_train_step(model, batch, optimizer, scaler, device_type="cuda", dtype=torch.float16):
    """Correct, in another style: model.zero_grad with zeros kept, nn.CrossEntropyLoss, keyword arguments,
    and the loss read through .detach().cpu()."""
    criterion = nn.CrossEntropyLoss()
    inputs, targets = batch
    model.zero_grad(set_to_none=False)
    with torch.autocast(device_type=device_type, dtype=dtype, enabled=True):
        logits = model(inputs)
        loss = criterion(logits, targets)
    scaled = scaler.scale(loss)
    scaled.backward()
    result = scaler.step(optimizer)
    scaler.update()
    return float(loss.detach().cpu())
