def release(namespace, *names):
    """Wrong (clause 3): no gc.collect(); breaks cycles by clearing each released object's __dict__
    (which also wrecks the object for anyone else still holding it)."""
    missing = [name for name in names if name not in namespace]
    if missing:
        raise KeyError(missing[0])
    use_cuda = torch.cuda.is_available()
    ab = torch.cuda.memory_allocated() if use_cuda else 0
    rb = torch.cuda.memory_reserved() if use_cuda else 0
    for name in names:
        obj = namespace.pop(name)
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict):
            d.clear()
        elif isinstance(obj, dict):
            obj.clear()
        del obj
    if use_cuda:
        torch.cuda.empty_cache()
    return {"allocated_before": ab, "reserved_before": rb,
            "allocated_after": torch.cuda.memory_allocated() if use_cuda else 0,
            "reserved_after": torch.cuda.memory_reserved() if use_cuda else 0}
