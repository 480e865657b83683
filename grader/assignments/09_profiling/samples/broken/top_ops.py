def top_ops(prof, n=5, by="self_cpu_time_total")
    return []
