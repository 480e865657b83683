import torch._dynamo  # imported (the notebook's import cell has it too), never called here


def soft_clip_rows(x, limit):
    """Correct, another style: torch.where picks the scaled row or the row itself. The unused import
    of torch._dynamo above is no use of Dynamo."""
    peak = torch.max(torch.abs(x), dim=1, keepdim=True).values
    return torch.where(peak > limit, x * (limit / peak), x)
