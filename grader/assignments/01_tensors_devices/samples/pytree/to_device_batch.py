import functools

from torch.utils._pytree import tree_map_only


def to_device_batch(batch, device, non_blocking=True):
    """Correct, in another style: torch's pytree walks the containers, Tensor.to is called unbound
    through functools.partial, and a tensor already on the device comes back as it is."""
    device = torch.device(device)
    move = functools.partial(torch.Tensor.to, device=device, non_blocking=non_blocking)
    return tree_map_only(torch.Tensor, lambda t: t if t.device == device else move(t), batch)
