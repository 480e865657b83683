import torch


def shard_indices(n, rank, world_size, epoch=0, seed=0, shuffle=True):
    """Another style: position rank + k * world_size of the padded order is position
    (rank + k * world_size) % n of the order itself."""
    if n == 0:
        return []
    if shuffle:
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        order = [int(i) for i in torch.randperm(n, generator=g)]
    else:
        order = list(range(n))
    per_rank = -(-n // world_size)
    return [order[(rank + k * world_size) % n] for k in range(per_rank)]
