import torch._dynamo


def compile_for_batches(fn, backend="inductor"):
    """Correct, another style: every size dynamic by default, but only while run calls the compiled
    function (config.patch restores the setting), and the feature size pinned back to static."""
    compiled = torch.compile(fn, backend=backend)

    def run(tokens, mask):
        torch._dynamo.mark_static(tokens, 2)
        with torch._dynamo.config.patch(assume_static_by_default=False):
            return compiled(tokens, mask)

    return run
