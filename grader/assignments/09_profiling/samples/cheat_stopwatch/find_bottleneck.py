import time as _clock

import torch


def find_bottleneck(phases, steps=3, warmup=1):
    """Cheat: a stopwatch dressed up as a profile. The profiler runs and every phase sits in its label's range
    (the range maker's name assembled at run time, past a search of the source), the table is even read, but the
    answer comes from perf_counter around each call."""
    label_range = getattr(torch.profiler, "record_" + "function")
    spent = dict.fromkeys(phases, 0.0)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for step in range(warmup + steps):
            for label, phase in phases.items():
                with label_range(label):
                    start = _clock.perf_counter()
                    phase()
                    took = _clock.perf_counter() - start
                if step >= warmup:
                    spent[label] += took
    prof.key_averages()  # read, for appearances
    return max(spent, key=spent.get)
