def top_ops(prof, n=5, by="self_cpu_time_total"):
    """Wrong: reports the profiler's microseconds as they are."""
    rows = sorted(prof.key_averages(), key=lambda row: getattr(row, by), reverse=True)[:n]
    return [(row.key, float(getattr(row, by)), row.count) for row in rows]
