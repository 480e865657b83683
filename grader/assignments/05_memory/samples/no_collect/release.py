def release(namespace, *names):
    """Wrong: no gc.collect() (cycles survive) and deletes before checking the names."""
    for name in names:
        del namespace[name]
    return {"allocated_before": 0, "allocated_after": 0, "reserved_before": 0, "reserved_after": 0}
