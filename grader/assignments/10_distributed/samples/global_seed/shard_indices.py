import math

import torch


def shard_indices(n, rank, world_size, epoch=0, seed=0, shuffle=True):
    """Wrong (clause 5, global RNG): seeds the global generator and draws from it. The indices are
    right, but every call resets the caller's random state."""
    if shuffle:
        torch.manual_seed(seed + epoch)
        order = torch.randperm(n).tolist()
    else:
        order = list(range(n))
    total = math.ceil(n / world_size) * world_size
    while len(order) < total:
        order += order[: total - len(order)]
    return order[rank:total:world_size]
