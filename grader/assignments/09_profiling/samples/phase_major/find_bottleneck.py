def find_bottleneck(phases, steps=3, warmup=1):
    """Wrong (clause: one step calls every phase once, in the dict's order): warms up and profiles one phase at a
    time, all its calls in a row, instead of running whole steps."""
    for phase in phases.values():
        for _ in range(warmup):
            phase()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for label, phase in phases.items():
            for _ in range(steps):
                with record_function(label):
                    phase()
    totals = {row.key: row.cpu_time_total for row in prof.key_averages() if row.key in phases}
    return max(totals, key=totals.get)
