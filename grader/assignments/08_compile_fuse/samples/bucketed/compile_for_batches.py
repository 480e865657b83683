def compile_for_batches(fn, backend="inductor"):
    """Wrong (batch and length symbolic): pads every batch to one bucket of 8 sequences of 64 tokens, so a
    single static graph serves all calls; the sizes are fixed numbers in it (values 1, once 2, shapes 0)."""
    compiled = torch.compile(fn, backend=backend)

    def run(tokens, mask):
        batch, length, features = tokens.shape
        padded = tokens.new_zeros(8, 64, features)
        padded[:batch, :length] = tokens
        padded_mask = mask.new_zeros(8, 64)
        padded_mask[:batch, :length] = mask
        padded_mask[batch:, 0] = True          # padding rows get one real token, so no row is all -inf
        return compiled(padded, padded_mask)[:batch]

    return run
