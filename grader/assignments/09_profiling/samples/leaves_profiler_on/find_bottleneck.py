def find_bottleneck(phases, steps=3, warmup=1):
    """Wrong (clause: if a phase raises, its exception reaches the caller and the profiler is stopped): starts and
    stops the profiler by hand, so an exception in a phase leaves it running."""
    prof = profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=warmup, active=steps, repeat=1))
    prof.start()
    for _ in range(warmup + steps):
        for label, phase in phases.items():
            with record_function(label):
                phase()
        prof.step()
    prof.stop()
    totals = {row.key: row.cpu_time_total for row in prof.key_averages() if row.key in phases}
    return max(totals, key=totals.get)
