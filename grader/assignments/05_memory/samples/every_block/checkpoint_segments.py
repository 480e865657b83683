from torch.utils.checkpoint import checkpoint


def checkpoint_segments(blocks, x, segment_size):
    """Wrong: one checkpoint per block, whatever segment_size says."""
    if segment_size < 1:
        raise ValueError("segment_size must be at least 1")
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False)
    return x
