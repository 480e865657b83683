def compile_for_batches(fn, backend="inductor"):
    """Marks only the length dynamic: a smaller batch recompiles (values 1, once 0, static features 2)."""
    compiled = torch.compile(fn, backend=backend)

    def run(tokens, mask):
        torch._dynamo.mark_dynamic(tokens, 1)
        torch._dynamo.mark_dynamic(mask, 1)
        return compiled(tokens, mask)

    return run
