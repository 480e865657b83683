def find_bottleneck(phases, steps=3, warmup=1):
    """Wrong: compares self time, so a phase whose work happens in a child range looks cheap."""
    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=0, warmup=warmup, active=steps, repeat=1)) as prof:
        for _ in range(warmup + steps):
            for label, phase in phases.items():
                with record_function(label):
                    phase()
            prof.step()
    own = {row.key: row.self_cpu_time_total for row in prof.key_averages() if row.key in phases}
    return max(own, key=own.get)
