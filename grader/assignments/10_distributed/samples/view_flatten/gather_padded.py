import math

import torch
import torch.distributed as dist


def gather_padded(tensor, group=None):
    """Wrong (clause 3, non-contiguous input): flattens the rows with .view, which a transposed or
    sliced tensor cannot do; everything else is right."""
    world = dist.get_world_size(group)
    rows = tensor.shape[0]
    flat = tensor.view(rows, math.prod(tensor.shape[1:]))
    sizes = torch.empty(world, dtype=torch.int64)
    dist.all_gather_into_tensor(sizes, torch.tensor([rows]), group=group)
    longest = int(sizes.max())
    padded = torch.cat([flat, flat.new_zeros(longest - rows, flat.shape[1])])
    out = padded.new_empty(world * longest, flat.shape[1])
    dist.all_gather_into_tensor(out, padded, group=group)
    return [out[i * longest: i * longest + int(n)].view(int(n), *tensor.shape[1:]) for i, n in enumerate(sizes)]
