import heapq


def top_ops(prof, n=5, by="self_cpu_time_total"):
    """Adds the raw events up by name itself (what key_averages does), then keeps the n largest."""
    totals = {}
    for event in prof.events():
        microseconds, calls = totals.get(event.key, (0.0, 0))
        totals[event.key] = (microseconds + getattr(event, by), calls + 1)
    largest = heapq.nlargest(n, totals.items(), key=lambda item: item[1][0])
    return [(name, microseconds / 1e3, calls) for name, (microseconds, calls) in largest]
