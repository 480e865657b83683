def find_bottleneck(phases, steps=3, warmup=1):
    raise NotImplementedError("todo")
