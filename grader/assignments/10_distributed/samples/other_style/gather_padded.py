import math

import torch
import torch.distributed as dist
import torch.nn.functional as F


def gather_padded(tensor, group=None):
    """Another style: one flat buffer, all_gather_into_tensor, F.pad, then split by the true lengths."""
    world = dist.get_world_size(group=group)
    rows = torch.tensor([tensor.size(0)], device=tensor.device)
    all_rows = torch.empty(world, dtype=rows.dtype, device=tensor.device)
    dist.all_gather_into_tensor(all_rows, rows, group=group)
    longest = int(all_rows.max())
    width = math.prod(tensor.shape[1:])
    flat = F.pad(tensor.reshape(tensor.size(0), width), (0, 0, 0, longest - tensor.size(0)))
    out = flat.new_empty(world * longest, width)
    dist.all_gather_into_tensor(out, flat.contiguous(), group=group)
    blocks = out.view(world, longest, width)
    return [blocks[i, : int(n)].reshape(int(n), *tensor.shape[1:]) for i, n in enumerate(all_rows)]
