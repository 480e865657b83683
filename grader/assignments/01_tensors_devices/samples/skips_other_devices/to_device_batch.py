def to_device_batch(batch, device, non_blocking=True):
    """Wrong (the device asked for): only tensors on the cpu are moved; one already on another device
    (an accelerator, here meta) stays there, even when the cpu is asked for."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking) if batch.device.type == "cpu" else batch
    if isinstance(batch, dict):
        return {key: to_device_batch(value, device, non_blocking) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_device_batch(item, device, non_blocking) for item in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device_batch(item, device, non_blocking) for item in batch)
    return batch
