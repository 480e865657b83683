import functools

from torch.utils import checkpoint as ckpt


def _through(segment, h):
    return functools.reduce(lambda acc, block: block(acc), segment, h)


def checkpoint_segments(blocks, x, segment_size):
    """Correct, in another style: recursion over the remaining blocks, each segment a functools.partial
    run by reduce, the checkpoint's options spelled out."""
    if segment_size <= 0:
        raise ValueError("segment_size must be a positive int")

    def rest(h, remaining):
        if not remaining:
            return h
        head = functools.partial(_through, tuple(remaining[:segment_size]))
        return rest(ckpt.checkpoint(head, h, use_reentrant=False, preserve_rng_state=True),
                    remaining[segment_size:])

    return rest(x, [*blocks])
