import torch.utils.checkpoint as ckpt
from torch import nn


def checkpoint_segments(blocks, x, segment_size):
    """Correct, in another style: each segment becomes an nn.Sequential, taken off a queue."""
    if not segment_size >= 1:
        raise ValueError(f"bad segment_size {segment_size}")
    rest = list(blocks)
    while rest:
        segment, rest = nn.Sequential(*rest[:segment_size]), rest[segment_size:]
        x = ckpt.checkpoint(segment, x, use_reentrant=False)
    return x
