def checkpoint_segments(blocks, x, segment_size)
    return x
