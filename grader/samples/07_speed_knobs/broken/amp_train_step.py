def amp_train_step(model, batch, optimizer, scaler, device_type="cuda", dtype=torch.float16)
    return 0.0
