def checkpointed_forward(blocks, x)
    return x
