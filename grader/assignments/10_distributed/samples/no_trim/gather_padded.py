import torch
import torch.distributed as dist


def gather_padded(tensor, group=None):
    """Wrong: pads and gathers, but returns the padded tensors (no trimming)."""
    world = dist.get_world_size(group)
    size = torch.tensor([tensor.shape[0]])
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size, group=group)
    padded = tensor.new_zeros((int(max(sizes)), *tensor.shape[1:]))
    padded[: tensor.shape[0]] = tensor
    out = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(out, padded, group=group)
    return out
