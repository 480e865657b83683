def find_bottleneck(phases, steps=3, warmup=1):
    """Warms up by hand outside the profiler, then profiles the measured steps and sums the labels' events."""
    import torch

    def one_step():
        for label, phase in phases.items():
            with torch.profiler.record_function(label):
                phase()

    for _ in range(warmup):
        one_step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            one_step()
    spent = dict.fromkeys(phases, 0.0)
    for event in prof.events():
        if event.name in spent:
            spent[event.name] += event.cpu_time_total
    return sorted(spent, key=spent.get)[-1]
