from torch import nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential  # the notebook's import line, copied


def checkpoint_segments(blocks, x, segment_size):
    """Correct: checkpoint on each segment. checkpoint_sequential is imported and never called."""
    if not isinstance(segment_size, int) or segment_size < 1:
        raise ValueError(f"segment_size must be a positive int, got {segment_size!r}")
    blocks = list(blocks)
    for start in range(0, len(blocks), segment_size):
        x = checkpoint(nn.Sequential(*blocks[start:start + segment_size]), x, use_reentrant=False)
    return x
