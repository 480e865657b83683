import torch
import torch.distributed as dist


def gather_padded(tensor, group=None):
    """Wrong (clause 4, own dtype): pads into a default float32 buffer and casts back after the
    gather, so float64 values and large int64 values come back rounded."""
    world = dist.get_world_size(group)
    length = torch.tensor([tensor.shape[0]])
    lengths = [torch.zeros_like(length) for _ in range(world)]
    dist.all_gather(lengths, length, group=group)
    lengths = [int(n) for n in lengths]
    padded = torch.zeros(max(lengths), *tensor.shape[1:])
    padded[: tensor.shape[0]] = tensor
    gathered = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded, group=group)
    return [g[:n].to(tensor.dtype) for g, n in zip(gathered, lengths)]
