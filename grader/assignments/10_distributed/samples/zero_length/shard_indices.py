import math

import torch


def shard_indices(n, rank, world_size, epoch=0, seed=0, shuffle=True):
    """Wrong (clause 1, n may be 0): counts the repeats the padding needs by dividing by n, which
    fails for an empty dataset."""
    if shuffle:
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        order = torch.randperm(n, generator=g).tolist()
    else:
        order = list(range(n))
    per_rank = math.ceil(n / world_size)
    padded = order * math.ceil(per_rank * world_size / n)
    return padded[rank: per_rank * world_size: world_size]
