import torch.autograd.profiler as autograd_profiler


def find_bottleneck(phases, steps=3, warmup=1):
    """Correct, another style: the autograd profiler's own API (the engine under torch.profiler), the phases
    wrapped once with record_function as a decorator, the warm-up run before the profiler starts."""
    labelled = [autograd_profiler.record_function(label)(phase) for label, phase in phases.items()]
    for _ in range(warmup):
        for phase in labelled:
            phase()
    with autograd_profiler.profile() as prof:
        for _ in range(steps):
            for phase in labelled:
                phase()
    totals = {row.key: row.cpu_time_total for row in prof.key_averages() if row.key in phases}
    return max(phases, key=lambda label: totals.get(label, 0.0))
