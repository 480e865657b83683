def compile_for_batches(fn, backend="inductor"):
    """Wrong (fn's values, dtype kept): converts the tokens to float32 "to be safe", so bfloat16 tokens come
    back as float32 (values 0, once 2, shapes 2)."""
    compiled = torch.compile(fn, backend=backend)

    def run(tokens, mask):
        tokens, mask = tokens.float(), mask.bool()
        for tensor in (tokens, mask):
            torch._dynamo.mark_dynamic(tensor, 0)
            torch._dynamo.mark_dynamic(tensor, 1)
        return compiled(tokens, mask)

    return run
