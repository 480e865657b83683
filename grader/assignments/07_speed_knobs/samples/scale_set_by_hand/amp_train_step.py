def amp_train_step(model, batch, optimizer, scaler, max_norm, device_type="cuda", dtype=torch.float16):
    """Wrong (clause 6: the scale updated once, by the scaler's own rules): no update(); the scale is doubled
    after every clean step and halved after an overflow by hand, ignoring growth_interval (2000 by default)
    and the scaler's growth/backoff factors."""
    inputs, targets = batch
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    found = sum(v.item() for v in scaler._found_inf_per_device(optimizer).values())
    scaler._scale.mul_(0.5 if found else 2.0)
    scaler._per_optimizer_states.clear()
    return loss.item(), norm.item()
