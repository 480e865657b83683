def amp_train_step(model, batch, optimizer, scaler, max_norm, device_type="cuda", dtype=torch.float16):
    """Correct, in another style: model.zero_grad with zeros kept, nn.CrossEntropyLoss, keyword arguments,
    clip_grad_norm_ imported under its own name over the optimizer's parameter groups, and the values read
    through .detach().cpu()."""
    from torch.nn.utils import clip_grad_norm_

    criterion = nn.CrossEntropyLoss()
    inputs, targets = batch
    model.zero_grad(set_to_none=False)
    with torch.autocast(device_type=device_type, dtype=dtype, enabled=True):
        logits = model(inputs)
        loss = criterion(logits, targets)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.unscale_(optimizer)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    total = clip_grad_norm_(params, max_norm=max_norm, norm_type=2.0)
    result = scaler.step(optimizer)
    scaler.update()
    return float(loss.detach().cpu()), float(total.detach().cpu())
