def shard_indices(n, rank, world_size, epoch=0, seed=0, shuffle=True)
    return []
