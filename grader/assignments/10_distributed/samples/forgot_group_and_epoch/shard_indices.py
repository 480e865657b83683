import math

import torch


def shard_indices(n, rank, world_size, epoch=0, seed=0, shuffle=True):
    """Wrong for epochs: seeds with `seed` only, as if set_epoch were never called."""
    g = torch.Generator()
    g.manual_seed(seed)
    order = torch.randperm(n, generator=g).tolist() if shuffle else list(range(n))
    total = math.ceil(n / world_size) * world_size
    order = (order * math.ceil(total / n))[:total]
    return order[rank:total:world_size]
