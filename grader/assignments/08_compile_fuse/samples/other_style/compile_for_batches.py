import torch._dynamo


def compile_for_batches(fn, backend="inductor"):
    """Correct, another style: every size symbolic, then the feature size pinned back to static."""
    compiled = torch.compile(fn, backend=backend, dynamic=True)

    def run(tokens, mask):
        torch._dynamo.mark_static(tokens, 2)
        return compiled(tokens, mask)

    return run
