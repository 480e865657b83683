import gc


def release(namespace, *names):
    """The reference workflow plus torch.cuda.ipc_collect() after empty_cache (a common idiom)."""
    missing = [name for name in names if name not in namespace]
    if missing:
        raise KeyError(missing[0])
    use_cuda = torch.cuda.is_available()
    ab = torch.cuda.memory_allocated() if use_cuda else 0
    rb = torch.cuda.memory_reserved() if use_cuda else 0
    for name in names:
        del namespace[name]
    gc.collect()
    if use_cuda:
        torch.cuda.empty_cache()
        torch.cuda.ipc_collect()
    return {"allocated_before": ab, "reserved_before": rb,
            "allocated_after": torch.cuda.memory_allocated() if use_cuda else 0,
            "reserved_after": torch.cuda.memory_reserved() if use_cuda else 0}
