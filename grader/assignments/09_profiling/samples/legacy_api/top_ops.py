import heapq
from operator import attrgetter


def top_ops(prof, n=5, by="self_cpu_time_total"):
    """Correct, another style: heapq.nlargest over the table's rows with attrgetter."""
    value = attrgetter(by)
    return [(row.key, value(row) * 1e-3, int(row.count)) for row in heapq.nlargest(n, prof.key_averages(), key=value)]
