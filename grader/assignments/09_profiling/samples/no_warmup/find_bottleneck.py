def find_bottleneck(phases, steps=3, warmup=1):
    """Wrong: profiles every step, the warm-up included."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(warmup + steps):
            for label, phase in phases.items():
                with record_function(label):
                    phase()
    totals = {row.key: row.cpu_time_total for row in prof.key_averages() if row.key in phases}
    return max(totals, key=totals.get)
