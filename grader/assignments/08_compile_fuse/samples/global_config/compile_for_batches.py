import torch._dynamo


def compile_for_batches(fn, backend="inductor"):
    """Wrong (global settings untouched): makes every size dynamic from the first call by switching Dynamo's
    global default, which changes how every other function compiles (values 1, once 0, shapes 2)."""
    torch._dynamo.config.assume_static_by_default = False
    compiled = torch.compile(fn, backend=backend)

    def run(tokens, mask):
        torch._dynamo.mark_static(tokens, 2)
        return compiled(tokens, mask)

    return run
