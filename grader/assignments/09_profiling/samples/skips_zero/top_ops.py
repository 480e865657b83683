def top_ops(prof, n=5, by="self_cpu_time_total"):
    """Wrong (clause: every row counts, rows whose time is 0 included): leaves out rows that took no time,
    such as the "[memory]" row of a profile with memory events."""
    timed = [row for row in prof.key_averages() if getattr(row, by) > 0]
    timed.sort(key=lambda row: getattr(row, by), reverse=True)
    return [(row.key, getattr(row, by) / 1000.0, row.count) for row in timed[:n]]
