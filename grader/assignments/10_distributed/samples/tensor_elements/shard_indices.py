import math

import torch


def shard_indices(n, rank, world_size, epoch=0, seed=0, shuffle=True):
    """Wrong (clause 1, Python ints): with shuffling, list(randperm(...)) holds 0-d tensors, not ints
    (they compare equal to the right ints, so a plain == test passes)."""
    if shuffle:
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        order = list(torch.randperm(n, generator=g))
    else:
        order = list(range(n))
    total = math.ceil(n / world_size) * world_size
    while len(order) < total:
        order += order[: total - len(order)]
    return order[rank:total:world_size]
