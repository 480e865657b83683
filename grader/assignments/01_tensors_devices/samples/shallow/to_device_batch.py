def to_device_batch(batch, device, non_blocking=True):
    """Wrong: moves the top level only, and turns every sequence into a list."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    return [item.to(device) if isinstance(item, torch.Tensor) else item for item in batch]
