def _has_tensor(obj):
    if isinstance(obj, torch.Tensor):
        return True
    if isinstance(obj, dict):
        return any(_has_tensor(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_has_tensor(v) for v in obj)
    return False


def to_device_batch(batch, device, non_blocking=True):
    """Wrong: containers without tensors come back as the same objects, not new ones (the caller's list aliased)."""
    if not _has_tensor(batch):
        return batch
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return {k: to_device_batch(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_device_batch(v, device, non_blocking) for v in batch))
    if isinstance(batch, tuple):
        return tuple(to_device_batch(v, device, non_blocking) for v in batch)
    return [to_device_batch(v, device, non_blocking) for v in batch]
