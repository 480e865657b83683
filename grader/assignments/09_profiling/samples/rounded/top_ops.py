def top_ops(prof, n=5, by="self_cpu_time_total"):
    """Wrong (clause: milliseconds are the row's value / 1000, not rounded): rounds to whole microseconds."""
    rows = sorted(prof.key_averages(), key=lambda row: getattr(row, by), reverse=True)[:n]
    return [(row.key, round(getattr(row, by) / 1000, 3), row.count) for row in rows]
