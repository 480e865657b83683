from torch.utils.checkpoint import checkpoint


def checkpoint_segments(blocks, x, segment_size):
    """Wrong: one checkpoint around the whole chain, whatever segment_size says."""
    if segment_size < 1:
        raise ValueError("segment_size must be at least 1")

    def run(h):
        for block in blocks:
            h = block(h)
        return h
    return checkpoint(run, x, use_reentrant=False)
