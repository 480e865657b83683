import itertools
import math

import torch


def shard_indices(n, rank, world_size, epoch=0, seed=0, shuffle=True):
    """Another style: itertools.cycle for the padding, islice for the stride."""
    if shuffle:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    else:
        order = list(range(n))
    per_rank = math.ceil(n / world_size)
    padded = list(itertools.islice(itertools.cycle(order), per_rank * world_size))
    return list(itertools.islice(padded, rank, None, world_size))
