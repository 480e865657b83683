def compile_for_batches(fn, backend="inductor"):
    raise NotImplementedError("todo")
