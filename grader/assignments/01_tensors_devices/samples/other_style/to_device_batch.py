from collections.abc import Mapping


def to_device_batch(batch, device, non_blocking=True):
    """Correct, in another style: Mapping and _make for namedtuples."""
    move = lambda item: to_device_batch(item, device, non_blocking=non_blocking)  # noqa: E731
    if isinstance(batch, torch.Tensor):
        return batch.to(device=device, non_blocking=non_blocking)
    if isinstance(batch, Mapping):
        return {key: move(value) for key, value in batch.items()}
    if hasattr(batch, "_make"):
        return batch._make(move(item) for item in batch)
    if isinstance(batch, list):
        return [move(item) for item in batch]
    if isinstance(batch, tuple):
        return tuple(move(item) for item in batch)
    return batch
