from torch.utils import checkpoint as ckpt


def checkpointed_forward(blocks, x):
    """Correct, in another style: a lambda per block."""
    h = x
    for block in list(blocks):
        h = ckpt.checkpoint(lambda t, b=block: b(t), h, use_reentrant=False)
    return h
