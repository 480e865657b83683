import torch


def find_bottleneck(phases, steps=3, warmup=1):
    """Wrong (clause: return one of the phases' labels): returns the key of the row with the largest total time,
    which is an operator or a shared range when one of those outweighs every phase."""
    def step():
        for label, phase in phases.items():
            with torch.profiler.record_function(label):
                phase()

    for _ in range(warmup):
        step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    return max(prof.key_averages(), key=lambda row: row.cpu_time_total).key
