import gc


def release(namespace, *names):
    """Wrong (clause 2, names not listed stay untouched): also deletes every other name bound to the same
    objects (aliases), 'to really free them'."""
    missing = [name for name in names if name not in namespace]
    if missing:
        raise KeyError(missing[0])
    use_cuda = torch.cuda.is_available()
    ab = torch.cuda.memory_allocated() if use_cuda else 0
    rb = torch.cuda.memory_reserved() if use_cuda else 0
    targets = [id(namespace[name]) for name in names]
    for key in [k for k, v in namespace.items() if id(v) in targets]:
        del namespace[key]
    gc.collect()
    if use_cuda:
        torch.cuda.empty_cache()
    return {"allocated_before": ab, "reserved_before": rb,
            "allocated_after": torch.cuda.memory_allocated() if use_cuda else 0,
            "reserved_after": torch.cuda.memory_reserved() if use_cuda else 0}
