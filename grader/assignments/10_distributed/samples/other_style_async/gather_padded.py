import torch
import torch.distributed as dist


def gather_padded(tensor, group=None):
    """Another style: int32 lengths, torch.cat padding, an asynchronous gather, narrow to trim."""
    world = dist.get_world_size(group=group)
    mine = torch.tensor([len(tensor)], dtype=torch.int32)
    lengths = [torch.empty(1, dtype=torch.int32) for _ in range(world)]
    dist.all_gather(lengths, mine, group=group)
    longest = max(int(n.item()) for n in lengths)
    filler = torch.zeros((longest - len(tensor), *tensor.shape[1:]), dtype=tensor.dtype)
    padded = torch.cat([tensor, filler]).contiguous()
    received = [torch.zeros_like(padded) for _ in range(world)]
    work = dist.all_gather(received, padded, group=group, async_op=True)
    work.wait()
    return [r.narrow(0, 0, int(n.item())) for r, n in zip(received, lengths)]
