import torch
import torch.distributed as dist


def gather_padded(tensor, group=None):
    """Wrong for groups: ignores `group`, so it gathers over the whole world."""
    world = dist.get_world_size()
    size = torch.tensor([tensor.shape[0]])
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size)
    sizes = [int(s) for s in sizes]
    padded = torch.zeros((max(sizes), *tensor.shape[1:]), dtype=tensor.dtype)
    padded[: tensor.shape[0]] = tensor
    out = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(out, padded)
    return [o[:s] for o, s in zip(out, sizes)]
