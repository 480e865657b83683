import torch
import torch.distributed as dist


def gather_padded(tensor, group=None):
    """Wrong (clause 4, tensors only): the lengths travel with all_gather_object; the data itself is
    padded and gathered as it should be."""
    world = dist.get_world_size(group)
    lengths = [None] * world
    dist.all_gather_object(lengths, tensor.shape[0], group=group)
    padded = tensor.new_zeros((max(lengths), *tensor.shape[1:]))
    padded[: tensor.shape[0]] = tensor
    gathered = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded, group=group)
    return [g[:n] for g, n in zip(gathered, lengths)]
