import math

import torch


def shard_indices(n, rank, world_size, epoch=0, seed=0, shuffle=True):
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    order = torch.randperm(n, generator=g).tolist() if shuffle else list(range(n))
    total = math.ceil(n / world_size) * world_size
    while len(order) < total:
        order += order[: total - len(order)]
    return order[rank::world_size]
