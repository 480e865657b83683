def find_bottleneck(phases, steps=3, warmup=1):
    """Wrong (clause 5, errors): catches a phase's exception and raises a new one of the same type, with the
    label added to its message, instead of letting the phase's own exception through."""
    plan = schedule(wait=0, warmup=warmup, active=steps, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=plan) as prof:
        for _ in range(warmup + steps):
            for label, phase in phases.items():
                with record_function(label):
                    try:
                        phase()
                    except RuntimeError as e:
                        raise RuntimeError(f"phase {label}: {e}") from e
            prof.step()
    totals = {row.key: row.cpu_time_total for row in prof.key_averages() if row.key in phases}
    return max(totals, key=totals.get)
