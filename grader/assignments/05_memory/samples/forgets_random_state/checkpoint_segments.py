from torch.utils.checkpoint import checkpoint


def checkpoint_segments(blocks, x, segment_size):
    """Wrong (one clause): preserve_rng_state=False, to skip saving the random state. With blocks that
    draw random numbers (dropout) the recomputation draws other masks than the forward pass did, so
    the gradients are not the plain loop's; with deterministic blocks everything is right."""
    if segment_size < 1:
        raise ValueError("segment_size must be at least 1")
    blocks = list(blocks)

    def segment_fn(start):
        def run(h):
            for block in blocks[start:start + segment_size]:
                h = block(h)
            return h
        return run

    for start in range(0, len(blocks), segment_size):
        x = checkpoint(segment_fn(start), x, use_reentrant=False, preserve_rng_state=False)
    return x
