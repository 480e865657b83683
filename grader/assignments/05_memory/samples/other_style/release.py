import gc


def release(namespace, *names):
    """Correct, in another style: check, then del; a dict comprehension for the report."""
    for name in names:
        if name not in namespace:
            raise KeyError(f"{name!r} is not defined")
    cuda = torch.cuda.is_available()
    stat = lambda f: int(f()) if cuda else 0  # noqa: E731
    before = {"allocated": stat(torch.cuda.memory_allocated), "reserved": stat(torch.cuda.memory_reserved)}
    for name in names:
        del namespace[name]
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    after = {"allocated": stat(torch.cuda.memory_allocated), "reserved": stat(torch.cuda.memory_reserved)}
    return {f"{k}_{when}": v for when, d in (("before", before), ("after", after)) for k, v in d.items()}
