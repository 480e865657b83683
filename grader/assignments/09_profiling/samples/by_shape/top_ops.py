def top_ops(prof, n=5, by="self_cpu_time_total"):
    """Wrong (clause: the rows of key_averages() as it groups them, by name only): splits each operator by its
    input shapes, so a profile made with record_shapes=True gives other rows."""
    rows = sorted(prof.key_averages(group_by_input_shape=True), key=lambda row: getattr(row, by), reverse=True)
    return [(row.key, getattr(row, by) / 1000.0, row.count) for row in rows[:n]]
