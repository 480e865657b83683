def compile_for_batches(fn, backend="inductor"):
    """The default: a static first graph, then a recompile when a size changes (values 1, once 0, static 2)."""
    return torch.compile(fn, backend=backend)
