def checkpoint_segments(blocks, x, segment_size):
    """Wrong: no checkpoint at all, so every activation stays alive until backward."""
    if segment_size < 1:
        raise ValueError("segment_size must be at least 1")
    for block in blocks:
        x = block(x)
    return x
