def top_ops(prof, n=5, by="self_cpu_time_total"):
    """Wrong: always ranks by self time, whatever `by` says."""
    rows = sorted(prof.key_averages(), key=lambda row: row.self_cpu_time_total, reverse=True)[:n]
    return [(row.key, row.self_cpu_time_total / 1000, row.count) for row in rows]
